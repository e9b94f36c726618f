/**
 * Headless Chromium for the page's tests: Debian's `chromium` (or FORKPOOL_CHROMIUM), driven
 * by playwright-core; no browser is downloaded. Tests skip without it (`skipWith('chromium', ...)`).
 *
 *   const launch = useChromium();                 // at the top of a test file
 *   const context = await launch(cleanup);        // in a test: a fresh context with one page
 */
import { existsSync } from 'node:fs';
import { afterAll } from 'vitest';
import { chromium, type Browser, type BrowserContext } from 'playwright-core';
import type { Cleanup } from './cleanup.js';

export const CHROMIUM = process.env.FORKPOOL_CHROMIUM ?? '/usr/bin/chromium';
export const HAVE_CHROMIUM = existsSync(CHROMIUM);
const CHROMIUM_FLAGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

/**
 * One browser for the calling test file, started on first use and closed after its last test;
 * each call of the returned function opens a fresh context in it (its own cookies and storage,
 * like a new profile, with one page open), closed by `cleanup`. A browser start costs about a
 * second of CPU: a file pays it once, not once per test.
 */
export function useChromium(): (cleanup: Cleanup, viewport?: { width: number; height: number }) => Promise<BrowserContext> {
  let browser: Promise<Browser> | undefined;
  afterAll(async () => {
    await (await browser?.catch(() => undefined))?.close();
  });
  return async (cleanup, viewport = { width: 1100, height: 760 }) => {
    if (!HAVE_CHROMIUM) throw new Error(`no Chromium at ${CHROMIUM}: install Debian's package (apt-get install -y chromium) or set FORKPOOL_CHROMIUM`);
    browser ??= chromium.launch({ executablePath: CHROMIUM, headless: true, args: CHROMIUM_FLAGS });
    const context = await (await browser).newContext({ viewport });
    cleanup.add(() => context.close());
    await context.newPage();
    return context;
  };
}
