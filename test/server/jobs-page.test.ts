/**
 * The jobs page at fan-out scale, in headless Chromium (test/helpers/chromium.ts): 2,000 jobs
 * of the server and a session, frozen in a known state (test/helpers/frozen-fanout.ts). The
 * totals are the server's counts; paging reaches the last job; filters by state, agent and
 * text show the server's count; sorting by a column orders the rows; "cancel selected" and
 * "cancel all queued" end exactly those jobs; "retry" runs a failed job again; every list
 * request asks for one page, never every row. FORKPOOL_JOBS_PAGE_SCREENSHOT=path saves a picture.
 */
import type { Page } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import { useCleanup } from '../helpers/cleanup.js';
import { skipWithout } from '../helpers/system.js';
import { TOKEN } from '../helpers/server.js';
import { HAVE_CHROMIUM, useChromium } from '../helpers/chromium.js';
import { startFrozenFanout } from '../helpers/frozen-fanout.js';

const cleanup = useCleanup();
const launchChromium = useChromium();
/** Server jobs; with the session's two and one started from the API later: 2,000. */
const SERVER_JOBS = 1997;

/*
 * Predicates run in the page, so they are self-contained functions with arguments, never
 * strings: the page's CSP forbids eval. The test program has no DOM types: `document` is declared.
 */
declare const document: { getElementById(id: string): { textContent: string | null } | null };
const text = (page: Page, id: string) => page.textContent(`#${id}`);
const waitText = (page: Page, id: string, value: string) =>
  page.waitForFunction(([el, want]) => document.getElementById(el as string)?.textContent === want, [id, value], { timeout: 60_000 });
const rowRefs = (page: Page) => page.$$eval('#jobs tbody tr', (rows) => rows.map((r) => r.getAttribute('data-job-id') as string));
const row = (page: Page, ref: string) => page.locator(`#jobs tbody tr[data-job-id="${ref}"]`);

describe.skipIf(skipWithout('chromium', HAVE_CHROMIUM))('the jobs page with 2,000 jobs', () => {
  it('totals, paging, filters, sort, cancel selected, cancel all queued and retry, exactly', async () => {
    const fanout = await startFrozenFanout(cleanup, SERVER_JOBS);
    const { api, url, session } = fanout;
    const totals = async () => JSON.parse(await (await api('/v1/jobs?limit=1')).text()).totals.jobs as Record<string, number>;
    const context = await launchChromium(cleanup, { width: 1280, height: 1000 });
    const page = context.pages()[0] ?? (await context.newPage());
    const pageErrors: string[] = [];
    page.on('pageerror', (error) => pageErrors.push(error.message));
    const listLimits: string[] = [];
    page.on('request', (request) => {
      const asked = new URL(request.url());
      if (asked.pathname === '/v1/jobs' && request.method() === 'GET') listLimits.push(asked.searchParams.get('limit') ?? 'none');
    });
    await page.goto(`${url}/login?token=${TOKEN}`);
    await page.waitForSelector('#connection[data-state="live"]');

    // Totals: the server's counts (bg-1 failed, bg-2 ok, bg-3 and the session's first hung, the rest queued).
    await waitText(page, 'page-info', `1–50 of ${SERVER_JOBS + 2}`);
    expect(await totals()).toEqual({ queued: SERVER_JOBS - 3 + 1, running: 2, ended: 2 });
    expect(await text(page, 'total-queued')).toBe(String(SERVER_JOBS - 3 + 1));
    expect(await text(page, 'total-running')).toBe('2');
    expect(await text(page, 'total-ended')).toBe('2');
    expect(await rowRefs(page)).toEqual(Array.from({ length: 50 }, (_, i) => `bg-${i + 1}`));
    // The ended job's tool-call count stays.
    expect(await row(page, 'bg-2').locator('td.tool-calls').textContent()).toBe('1');

    // Paging reaches the last job; a job started meanwhile shows in the count and on the page without a reload.
    await page.click('#page-last');
    await waitText(page, 'page-info', `1951–${SERVER_JOBS + 2} of ${SERVER_JOBS + 2}`);
    expect((await rowRefs(page)).slice(-2)).toEqual([`${session}/bg-1`, `${session}/bg-2`]);
    expect(await row(page, `${session}/bg-1`).locator('td.agent').textContent()).toBe(`user job (${session})`);
    await api('/v1/jobs', { json: { task: 'One more.', label: 'late' } });
    await waitText(page, 'total-queued', String(SERVER_JOBS - 3 + 2));
    await waitText(page, 'page-info', '1951–2000 of 2000');
    expect((await rowRefs(page)).at(-1)).toBe(`bg-${SERVER_JOBS + 1}`);
    await page.click('#page-prev');
    await waitText(page, 'page-info', '1901–1950 of 2000');

    // Filters: state, agent, text; the count is the server's for the whole filtered list.
    await page.selectOption('#filter-state', 'failed');
    await waitText(page, 'page-info', '1–1 of 1');
    expect(await rowRefs(page)).toEqual(['bg-1']);
    await page.selectOption('#filter-state', 'queued');
    await waitText(page, 'page-info', `1–50 of ${SERVER_JOBS - 3 + 2}`);
    await page.selectOption('#filter-state', '');
    await page.fill('#filter-agent', 'scout');
    await waitText(page, 'page-info', `1–50 of ${Math.floor(SERVER_JOBS / 3)}`);
    expect(await page.$$eval('#jobs tbody td.agent', (cells) => cells.every((c) => c.textContent === 'scout'))).toBe(true);
    await page.fill('#filter-agent', '');
    await page.fill('#filter-text', 'ALPHA-199');
    // alpha-199 and alpha-1990 … alpha-1997.
    await waitText(page, 'page-info', '1–9 of 9');
    expect(await page.$$eval('#jobs tbody th', (cells) => cells.map((c) => c.textContent))).toEqual([
      'alpha-199',
      ...Array.from({ length: 8 }, (_, i) => `alpha-199${i}`),
    ]);
    await page.fill('#filter-text', '');
    await waitText(page, 'page-info', '1–50 of 2000');
    const screenshot = process.env.FORKPOOL_JOBS_PAGE_SCREENSHOT;
    if (screenshot) await page.screenshot({ path: screenshot, type: 'png' });

    // Sort by clicking a column: status descending puts the ended, then the running, first; tokens descending the one that spent most.
    await page.click('th[data-sort="state"] button');
    await page.waitForSelector('th[data-sort="state"][aria-sort="ascending"]');
    await page.waitForFunction(() => document.getElementById('jobs')?.textContent?.includes('queued') === true);
    await page.click('th[data-sort="state"] button');
    await page.waitForSelector('th[data-sort="state"][aria-sort="descending"]');
    await page.waitForSelector('#jobs tbody tr:first-child[data-job-id="bg-1"]');
    expect((await rowRefs(page)).slice(0, 4)).toEqual(['bg-1', 'bg-2', 'bg-3', `${session}/bg-1`]);
    await page.click('th[data-sort="tokens"] button');
    await page.click('th[data-sort="tokens"] button');
    await page.waitForSelector('th[data-sort="tokens"][aria-sort="descending"]');
    await page.waitForSelector('#jobs tbody tr:first-child[data-job-id="bg-2"]');
    await page.click('th[data-sort="spawn"] button');
    await page.waitForSelector('#jobs tbody tr:first-child[data-job-id="bg-1"]');

    // Cancel selected: two queued jobs here and the session's queued one on the last page; exactly those end.
    await row(page, 'bg-4').locator('td.select input').check();
    await row(page, 'bg-5').locator('td.select input').check();
    await page.click('#page-last');
    await row(page, `${session}/bg-2`).locator('td.select input').check();
    expect(await text(page, 'cancel-selected')).toBe('Cancel selected (3)');
    await page.click('#cancel-selected');
    await waitText(page, 'list-message', 'cancel requested for 3');
    await waitText(page, 'total-queued', String(SERVER_JOBS - 3 + 2 - 3));
    const states = async () =>
      new Map(
        JSON.parse(await (await api('/v1/jobs?limit=500&q=bg-')).text()).jobs.map((j: any) => [j.session ? `${j.session}/${j.id}` : j.id, j.status ?? j.state]),
      );
    const afterSelected = await states();
    expect([afterSelected.get('bg-4'), afterSelected.get('bg-5'), afterSelected.get('bg-6'), afterSelected.get('bg-3')]).toEqual([
      'cancelled',
      'cancelled',
      'queued',
      'running',
    ]);
    expect(await totals()).toEqual({ queued: SERVER_JOBS - 3 + 2 - 3, running: 2, ended: 5 });

    // Cancel all queued: every queued one, the running ones untouched.
    await page.click('#cancel-queued');
    await waitText(page, 'total-queued', '0');
    expect(await totals()).toEqual({ queued: 0, running: 2, ended: 2000 - 2 });
    expect(JSON.parse(await (await api('/v1/jobs?status=cancelled&limit=1')).text()).total).toBe(2000 - 4);

    // The running two, selected by filtering to them and selecting the page.
    await page.selectOption('#filter-state', 'running');
    await waitText(page, 'page-info', '1–2 of 2');
    await page.check('#select-page');
    await page.click('#cancel-selected');
    await waitText(page, 'total-running', '0');
    await page.selectOption('#filter-state', '');
    // A filter change starts again at the first page.
    await waitText(page, 'page-info', '1–50 of 2000');

    // Retry the failed job: it runs again and answers.
    fanout.answerNext('Retried: the answer.');
    await row(page, 'bg-1').locator('button.retry').click();
    await page.waitForSelector('#jobs tbody tr[data-job-id="bg-1"][data-status="ok"]', { timeout: 60_000 });
    expect(await row(page, 'bg-1').getAttribute('data-history')).toMatch(/^failed .*ok$/);
    expect(await row(page, 'bg-1').locator('button.retry').isHidden()).toBe(true);
    await waitText(page, 'total-ended', '2000');

    // Every list request asked for one page of the page's size, never every row.
    expect(listLimits.length).toBeGreaterThan(0);
    expect(new Set(listLimits)).toEqual(new Set(['50']));
    expect(pageErrors).toEqual([]);
  }, 300_000);
});
