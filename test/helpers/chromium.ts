/**
 * Headless Chromium for the page's tests: Debian's `chromium` (or FORKPOOL_CHROMIUM), driven
 * by playwright-core; no browser is downloaded. Tests skip without it (`skipWith('chromium', ...)`).
 */
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { chromium, type BrowserContext } from 'playwright-core';
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

/** A fresh browser profile (closed and removed by `cleanup`). */
export async function launchChromium(cleanup: Cleanup, viewport = { width: 1100, height: 760 }): Promise<BrowserContext> {
  if (!HAVE_CHROMIUM) throw new Error(`no Chromium at ${CHROMIUM}: install Debian's package (apt-get install -y chromium) or set FORKPOOL_CHROMIUM`);
  const profile = mkdtempSync(path.join(tmpdir(), 'forkpool-chromium-'));
  cleanup.add(() => rmSync(profile, { recursive: true, force: true }));
  // A persistent context is how playwright takes a fresh --user-data-dir of our own.
  const context = await chromium.launchPersistentContext(profile, { executablePath: CHROMIUM, headless: true, args: CHROMIUM_FLAGS, viewport });
  cleanup.add(() => context.close());
  return context;
}
