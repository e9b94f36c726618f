/**
 * The jobs page end to end in headless Chromium (Debian's `chromium`, driven by playwright-core;
 * no browser is downloaded): sign in, start three jobs from the form, watch them go queued →
 * running → ok without a reload, cancel one, open a result; then restart the server on the same
 * port and watch the page reconnect by itself. `FORKPOOL_UPDATE_SCREENSHOT=1` rewrites
 * docs/server-page.png for docs/server.md.
 */
import { readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { Page } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import { startForkpoolServer } from '../../src/server/app.js';
import { cleanupOf } from '../helpers/cleanup.js';
import { tempWorkspace } from '../helpers/config.js';
import { skipWithout } from '../helpers/system.js';
import { TOKEN, startTestServer } from '../helpers/server.js';
import { HAVE_CHROMIUM, useChromium } from '../helpers/chromium.js';

const SCREENSHOT = new URL('../../docs/server-page.png', import.meta.url).pathname;

/** A fresh browser context with one page, in the file's one headless Chromium (test/helpers/chromium.ts). */
const launch = useChromium();

async function startJob(page: Page, task: string, label: string): Promise<string> {
  await page.fill('#task', task);
  await page.fill('#label', label);
  await page.click('#start-form button[type="submit"]');
  // By its label, not its position: a child of an earlier job may be drawn in between meanwhile.
  const row = page.locator(`#jobs tbody tr:has(th:text-is("${label}"))`);
  await row.waitFor();
  return (await row.getAttribute('data-job-id')) as string;
}

/*
 * Predicates run in the page, so they are self-contained functions, never strings: the page's
 * Content-Security-Policy forbids eval, which a string predicate needs once it has to poll. The
 * test program has no DOM types: `document` is declared for them.
 */
declare const document: { querySelector(s: string): { textContent: string | null } | null; querySelectorAll(s: string): { length: number } };

const history = (page: Page, id: string) => page.locator(`#job-${id}`).getAttribute('data-history');

// Side by side (concurrent): each test has its own server, sim, workspace and browser context.
describe.skipIf(skipWithout('chromium', HAVE_CHROMIUM))('the jobs page in headless Chromium', { concurrent: true }, () => {
  it('starts three jobs from the form, shows them live to the end, cancels one, opens a result, reconnects after a restart', async (context) => {
    const cleanup = cleanupOf(context);
    const workspaceRoot = tempWorkspace({ 'src/retry.ts': 'export function retryBackoff(attempt: number) { return 2 ** attempt * 100; }\n' }, cleanup);
    const { server, url } = await startTestServer(cleanup, { workspaceRoot, background: { maxConcurrent: 2 } }, { latencyMs: 600 });
    const page = (await launch(cleanup)).pages()[0] as Page;
    const pageErrors: string[] = [];
    page.on('pageerror', (error) => pageErrors.push(error.message));

    await page.goto(`${url}/login?token=${TOKEN}`);
    expect(new URL(page.url()).pathname).toBe('/');
    await page.waitForSelector('#connection[data-state="live"]');

    const alpha = await startJob(page, 'Where is the retry backoff implemented?', 'alpha');
    const beta = await startJob(page, 'Which file computes the retry delay?', 'beta');
    const gamma = await startJob(page, 'Find the backoff constant.', 'gamma');
    // Two run at once: gamma waits in the queue, and is cancelled from there.
    await page.click(`#job-${gamma} button.cancel`);
    await page.waitForSelector(`#job-${gamma}[data-status="cancelled"]`);
    for (const id of [alpha, beta]) await page.waitForSelector(`#job-${id}[data-status="ok"]`, { timeout: 30_000 });

    // Every status each row showed, in order, with no reload in between.
    expect(await history(page, alpha)).toBe('queued running ok');
    expect(await history(page, beta)).toBe('queued running ok');
    expect(await history(page, gamma)).toMatch(/^queued (running )?cancelled$/);
    await page.waitForFunction(
      () => document.querySelector('#total-ended')?.textContent === '3' && Number(document.querySelector('#total-tokens')?.textContent) > 0,
    );
    expect(await page.textContent('#total-running')).toBe('0');

    await page.click(`#job-${alpha} button.details`);
    await page.waitForSelector('#detail:not([hidden])');
    await page.waitForFunction(() => (document.querySelector('#detail-result')?.textContent ?? '').length > 0);
    const result = (await page.textContent('#detail-result')) as string;
    expect(result).toContain('retry');
    expect(result).not.toMatch(/^\(still/);
    // The tools the job was offered (issue 34: visible on every surface), as its record lists them.
    const facts = await page.$$eval('#detail-facts dt', (terms) => terms.map((dt) => [dt.textContent, dt.nextElementSibling?.textContent]));
    expect(Object.fromEntries(facts)).toMatchObject({ tools: expect.stringMatching(/^read_file, /) });
    expect(await page.evaluate('document.activeElement?.id')).toBe('detail-title');
    await page.screenshot({ path: process.env.FORKPOOL_UPDATE_SCREENSHOT ? SCREENSHOT : path.join(tmpdir(), 'forkpool-server-page.png'), fullPage: true });

    // The server restarts on the same port (same token): the page notices, reconnects and shows the new server's jobs.
    const port = Number(new URL(url).port);
    await server.close();
    await page.waitForSelector('#connection[data-state="offline"]');
    const again = await startForkpoolServer({ config: server.state.config, token: TOKEN, port });
    cleanup.add(() => again.close());
    await page.waitForSelector('#connection[data-state="live"]', { timeout: 30_000 });
    await page.waitForFunction(() => document.querySelectorAll('#jobs tbody tr').length === 0);
    await fetch(`${again.url}/v1/jobs`, {
      method: 'POST',
      headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify({ task: 'After the restart: where is the backoff?', label: 'after-restart' }),
    });
    await page.waitForSelector('#jobs tbody tr[data-job-id="bg-1"] th:text("after-restart")');
    expect(pageErrors).toEqual([]);
  });

  it('shows a nested job right under the job that spawned it, indented, with its agent', async (context) => {
    const cleanup = cleanupOf(context);
    const workspaceRoot = tempWorkspace({ 'src/retry.ts': 'export function retryBackoff(attempt: number) { return 2 ** attempt * 100; }\n' }, cleanup);
    const agents = { scout: { description: 'Finds where things are', model: 'forkpool-sim-scout' } };
    const { url } = await startTestServer(cleanup, { workspaceRoot, agents, background: { maxConcurrent: 3, maxDepth: 2 } }, { latencyMs: 200 });
    const page = (await launch(cleanup)).pages()[0] as Page;
    await page.goto(`${url}/login?token=${TOKEN}`);
    await page.waitForSelector('#connection[data-state="live"]');
    const boss = await startJob(page, 'Delegate: where is the retry backoff implemented?', 'boss');
    const later = await startJob(page, 'Which file computes the retry delay?', 'later');
    await fetch(`${url}/v1/jobs`, {
      method: 'POST',
      headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify({ task: 'Where is the backoff?', label: 'peer', agent: 'scout' }),
    });
    // The child appears after both top-level rows were drawn, yet sits right under its parent.
    const child = page.locator(`#jobs tbody tr[data-ancestors~="${boss}"]`).first();
    await child.waitFor({ timeout: 30_000 });
    const order = await page.$$eval('#jobs tbody tr', (rows) => rows.map((r) => r.getAttribute('data-job-id')));
    const childId = (await child.getAttribute('data-job-id')) as string;
    expect(order.indexOf(childId)).toBe(order.indexOf(boss) + 1);
    expect(order.indexOf(later)).toBeGreaterThan(order.indexOf(childId));
    expect(await child.locator('th').textContent()).toMatch(/^\s*└ /);
    await page.waitForSelector('#jobs tbody tr th:text("peer")');
    const peerAgent = await page.$$eval(
      '#jobs tbody tr',
      (rows) => rows.find((r) => r.querySelector('th')?.textContent === 'peer')?.querySelector('td.agent')?.textContent,
    );
    expect(peerAgent).toBe('scout');
  });
  it('shows a job that waits for an approval (status, the tool it wants), and its Allow button runs the call', async (context) => {
    const cleanup = cleanupOf(context);
    const workspaceRoot = tempWorkspace({}, cleanup);
    const { url } = await startTestServer(
      cleanup,
      { workspaceRoot, approvals: 'ask' },
      { script: [{ toolCalls: [{ name: 'write_file', arguments: { path: 'notes.txt', content: 'from the page\n' } }] }, { content: 'Wrote notes.txt.' }] },
    );
    const page = (await launch(cleanup)).pages()[0] as Page;
    const pageErrors: string[] = [];
    page.on('pageerror', (error) => pageErrors.push(error.message));
    await page.goto(`${url}/login?token=${TOKEN}`);
    await page.waitForSelector('#connection[data-state="live"]');
    const id = await startJob(page, 'Write notes.txt.', 'writer');
    const row = page.locator(`#job-${id}[data-status="awaiting_approval"]`);
    await row.waitFor({ timeout: 30_000 });
    expect(await row.textContent()).toContain('awaiting approval');
    expect(await row.textContent()).toContain('\u23f8 write_file');

    await page.click(`#job-${id} button.details`);
    await page.waitForSelector('#detail:not([hidden]) button.approval-allow');
    const facts = await page.$$eval('#detail-facts dt', (terms) => terms.map((dt) => [dt.textContent, dt.nextElementSibling?.textContent]));
    expect(Object.fromEntries(facts)).toMatchObject({ 'waits for': expect.stringMatching(/^write_file: write notes\.txt \(14 bytes\)/) });
    await page.click('#detail button.approval-allow');
    await page.waitForSelector(`#job-${id}[data-status="ok"]`, { timeout: 30_000 });
    expect(await history(page, id)).toMatch(/ awaiting_approval (running )?ok$/);
    expect(readFileSync(path.join(workspaceRoot, 'notes.txt'), 'utf8')).toBe('from the page\n');
    // The open detail follows: the question is gone, the answer recorded as by http.
    await page.waitForFunction(() => document.querySelectorAll('#detail button.approval-allow').length === 0);
    const after = await page.$$eval('#detail-facts dt', (terms) => terms.map((dt) => [dt.textContent, dt.nextElementSibling?.textContent]));
    expect(Object.fromEntries(after)).toMatchObject({ approval: 'write_file allow by http' });
    expect(pageErrors).toEqual([]);
  });

  it('shows a sleeping job (scheduler sleep): status sleeping, its wake time in the row and the detail; Cancel ends it', async (context) => {
    const cleanup = cleanupOf(context);
    const workspaceRoot = tempWorkspace({}, cleanup);
    const { url } = await startTestServer(
      cleanup,
      { workspaceRoot, background: { scheduler: 'sleep' } },
      { script: [{ toolCalls: [{ name: 'schedule_next_turn', arguments: { after: '6h', reason: 'scan the queue again' } }] }] },
    );
    const page = (await launch(cleanup)).pages()[0] as Page;
    const pageErrors: string[] = [];
    page.on('pageerror', (error) => pageErrors.push(error.message));
    await page.goto(`${url}/login?token=${TOKEN}`);
    await page.waitForSelector('#connection[data-state="live"]');
    const id = await startJob(page, 'Watch the queue.', 'watcher');
    const row = page.locator(`#job-${id}[data-status="sleeping"]`);
    await row.waitFor({ timeout: 30_000 });
    expect(await row.textContent()).toMatch(/\u263e \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC/);

    await page.click(`#job-${id} button.details`);
    await page.waitForSelector('#detail:not([hidden])');
    const facts = await page.$$eval('#detail-facts dt', (terms) => terms.map((dt) => [dt.textContent, dt.nextElementSibling?.textContent]));
    expect(Object.fromEntries(facts)).toMatchObject({ status: 'sleeping', 'asleep until': expect.stringMatching(/^\d{4}-.*Z: scan the queue again$/) });
    // The status filter has `sleeping` (the API's waiting=sleeping): the row stays; `awaiting approval` and `queued` drop it.
    for (const [option, shown] of [
      ['approval', false],
      ['sleeping', true],
      ['queued', false],
      ['', true],
    ] as const) {
      await page.selectOption('#filter-state', option);
      await page.waitForSelector(`#job-${id}`, { state: shown ? 'attached' : 'detached', timeout: 30_000 });
    }
    await page.click(`#job-${id} button.cancel`);
    await page.waitForSelector(`#job-${id}[data-status="cancelled"]`, { timeout: 30_000 });
    expect(pageErrors).toEqual([]);
  });

  it("shows a job's transcript in its detail: one collapsible step each, model text as text (no markup), no key", async (context) => {
    const cleanup = cleanupOf(context);
    const secret = 'sk-page-transcript-secret-0123456789';
    const workspaceRoot = tempWorkspace({ 'retry.ts': 'export function retryBackoff() {}\n', 'leak.txt': `key=${secret}\n` }, cleanup);
    const { url } = await startTestServer(
      cleanup,
      { workspaceRoot, apiKey: secret, tools: ['grep', 'read_file'] },
      {
        script: [
          { content: 'Looking <img src=x id=injected onerror=alert(1)>.', toolCalls: [{ name: 'grep', arguments: { pattern: 'retry' } }] },
          { toolCalls: [{ name: 'read_file', arguments: { path: 'leak.txt' } }] },
          { content: 'In retry.ts.' },
        ],
      },
    );
    const page = (await launch(cleanup)).pages()[0] as Page;
    const pageErrors: string[] = [];
    page.on('pageerror', (error) => pageErrors.push(error.message));
    await page.goto(`${url}/login?token=${TOKEN}`);
    await page.waitForSelector('#connection[data-state="live"]');
    const id = await startJob(page, 'Where is the retry backoff?', 'steps');
    await page.waitForSelector(`#job-${id}[data-history~="ok"]`, { timeout: 30_000 });
    await page.click(`#job-${id} button.details`);
    await page.waitForSelector('#detail-transcript details[data-step="5"]');
    const summaries = await page.$$eval('#detail-transcript details summary', (items) => items.map((item) => item.textContent ?? ''));
    expect(summaries).toHaveLength(5);
    expect(summaries[0]).toMatch(/^#1 model \d+\.\d s \d+ tok → grep \{"pattern":"retry"\}$/);
    expect(summaries[1]).toMatch(/^#2 tool grep \d+\.\d s: \d+ chars$/);
    expect(summaries[3]).toMatch(/^#4 tool read_file/);
    expect(await page.textContent('#detail-transcript-summary')).toBe('5 step(s)');
    // Collapsed until opened; opened, the tool's output shows, its key redacted.
    expect(await page.locator('#detail-transcript details[data-step="4"]').getAttribute('open')).toBeNull();
    await page.click('#detail-transcript details[data-step="4"] summary');
    expect(await page.textContent('#detail-transcript details[data-step="4"] pre')).toMatch(/key=\[REDACTED\]/);
    // The model's markup is text on the page, never an element.
    expect(await page.textContent('#detail-transcript details[data-step="1"] pre')).toContain('<img src=x id=injected onerror=alert(1)>');
    expect(await page.locator('#injected').count()).toBe(0);
    expect(await page.content()).not.toContain(secret);
    expect(pageErrors).toEqual([]);
  });
});
