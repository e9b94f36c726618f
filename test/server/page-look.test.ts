/**
 * What a person sees on the jobs page (issue 36, "Done means"): while the first list is on
 * its way it says it is loading, not "No jobs yet."; every row shows the job's id; a `partial`
 * job and a `cancelled` one have different colours. Headless Chromium, a real server and pool.
 */
import type { Page, Route } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import { useCleanup } from '../helpers/cleanup.js';
import { tempWorkspace } from '../helpers/config.js';
import { skipWithout } from '../helpers/system.js';
import { TOKEN, startTestServer } from '../helpers/server.js';
import { HAVE_CHROMIUM, useChromium } from '../helpers/chromium.js';

const cleanup = useCleanup();
const launchChromium = useChromium();

declare const document: { querySelector(s: string): { textContent: string | null } | null };
declare function getComputedStyle(element: unknown): { color: string };

const statusColour = (page: Page, id: string) => page.$eval(`#job-${id} td.status`, (cell) => getComputedStyle(cell).color);

describe.skipIf(skipWithout('chromium', HAVE_CHROMIUM))('the jobs page, as it looks', () => {
  it('loading (not "No jobs yet.") until the list comes; an id column; partial and cancelled in different colours', async () => {
    const workspaceRoot = tempWorkspace({ 'src/retry.ts': 'export function retryBackoff(attempt: number) { return 2 ** attempt * 100; }\n' }, cleanup);
    const { url, api } = await startTestServer(cleanup, { workspaceRoot, background: { maxConcurrent: 1 } }, { latencyMs: 300 });
    const context = await launchChromium(cleanup);
    const page = context.pages()[0] ?? (await context.newPage());
    const pageErrors: string[] = [];
    page.on('pageerror', (error) => pageErrors.push(error.message));

    // The first job list is held back: the page is connecting and knows nothing yet.
    let releaseList: () => void = () => {};
    const listHeld = new Promise<void>((resolve) => (releaseList = resolve));
    let sawListRequest: () => void = () => {};
    const listAsked = new Promise<void>((resolve) => (sawListRequest = resolve));
    await page.route(
      (asked) => asked.pathname === '/v1/jobs',
      async (route: Route) => {
        sawListRequest();
        await listHeld;
        await route.continue();
      },
    );
    await page.goto(`${url}/login?token=${TOKEN}`);
    await listAsked;
    expect(await page.textContent('#empty')).toBe('Loading jobs…');
    expect(await page.isVisible('#empty')).toBe(true);
    releaseList();
    await page.waitForFunction(() => document.querySelector('#empty')?.textContent === 'No jobs yet.');

    // One job finds nothing (partial); the second waits behind it and is cancelled from the queue.
    const spawn = async (task: string, label: string) => {
      const body = (await (await api('/v1/jobs', { json: { task, label } })).json()) as { jobs: Array<{ id: string }> };
      return body.jobs[0]?.id as string;
    };
    const partial = await spawn('Where is the zebra enclosure configured?', 'zebra');
    const cancelled = await spawn('Where is the retry backoff implemented?', 'retry');
    await page.click(`#job-${cancelled} button.cancel`);
    await page.waitForSelector(`#job-${cancelled}[data-status="cancelled"]`);
    await page.waitForSelector(`#job-${partial}[data-status="partial"]`, { timeout: 30_000 });

    expect(await page.$$eval('#jobs thead th', (cells) => cells.map((c) => c.textContent))).toContain('Id');
    for (const id of [partial, cancelled]) expect(await page.textContent(`#job-${id} td.id`)).toBe(id);
    expect(await statusColour(page, partial)).not.toBe(await statusColour(page, cancelled));
    expect(pageErrors).toEqual([]);
  });

  it('a job waiting out a 429 shows it live in its row (↻ 1/3 429, who and how long on hover), gone once it ends', async () => {
    const { url, api } = await startTestServer(cleanup, { maxRetries: 3 }, { faults: { 1: { kind: '429', retryAfterSeconds: 20 } } });
    const context = await launchChromium(cleanup);
    const page = context.pages()[0] ?? (await context.newPage());
    const pageErrors: string[] = [];
    page.on('pageerror', (error) => pageErrors.push(error.message));
    await page.goto(`${url}/login?token=${TOKEN}`);
    await page.waitForFunction(() => document.querySelector('#empty')?.textContent === 'No jobs yet.');

    const body = (await (await api('/v1/jobs', { json: { task: 'anything', label: 'limited' } })).json()) as { jobs: Array<{ id: string }> };
    const id = body.jobs[0]?.id as string;
    // The 20 s wait is far longer than the page takes to show it.
    await page.waitForFunction((cell) => document.querySelector(cell)?.textContent === '\u21bb 1/3 429', `#job-${id} td.tool`, { timeout: 15_000 });
    expect(await page.getAttribute(`#job-${id} td.tool`, 'title')).toMatch(/^retrying 127\.0\.0\.1:\d+ after \d+\.\d s$/);

    await page.click(`#job-${id} button.cancel`);
    await page.waitForSelector(`#job-${id}[data-status="cancelled"]`);
    expect(await page.textContent(`#job-${id} td.tool`)).toBe('');
    expect(pageErrors).toEqual([]);
  });
});
