#!/usr/bin/env node
// Draws docs/tui-chat.png: `forkpool chat` on the simulator in a real terminal (tmux, private
// socket), a question that fans out, the background panel open; the pane captured with its
// colours (capture-pane -e), turned into HTML and photographed by headless Chromium.
// Run after `npm run build`: node docs/make-tui-screenshot.mjs [out.png]
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync, mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const out = process.argv[2] ?? path.join(root, 'docs', 'tui-chat.png');
const CHROMIUM = process.env.FORKPOOL_CHROMIUM ?? '/usr/bin/chromium';
const socket = `fp-shot-${process.pid}`;
const work = mkdtempSync(path.join(tmpdir(), 'forkpool-shot-'));
mkdirSync(path.join(work, 'src'));
writeFileSync(
  path.join(work, 'src', 'retry.ts'),
  '// Retry with exponential backoff.\nexport function retryBackoff(attempt: number): number {\n  return Math.min(30_000, 250 * 2 ** attempt);\n}\n',
);
writeFileSync(path.join(work, 'src', 'cache.ts'), '// An LRU cache with a size limit.\nexport class LruCache {}\n');
writeFileSync(path.join(work, 'README.md'), '# demo\nA small workspace for the chat screenshot.\n');
const env = { ...process.env, TERM: 'xterm-256color' };
delete env.CI;
const tmux = (...args) => execFileSync('tmux', ['-L', socket, '-f', '/dev/null', ...args], { env, cwd: tmpdir(), encoding: 'utf8' });

function waitScreen(test, what) {
  const deadline = Date.now() + 60_000;
  for (;;) {
    const screen = tmux('capture-pane', '-p', '-J');
    if (test(screen)) return screen;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}\n${screen}`);
    execFileSync('sleep', ['0.1']);
  }
}

try {
  tmux(
    'new-session',
    '-d',
    '-x',
    '110',
    '-y',
    '34',
    '-c',
    work,
    process.execPath,
    path.join(root, 'dist', 'cli', 'index.js'),
    'chat',
    '--sim-latency',
    '400',
    '--sim-steps',
    '40',
    '--max-iterations',
    '60',
    '--concurrency',
    '2',
  );
  tmux('set-option', '-g', 'status', 'off');
  waitScreen((s) => s.includes('ask something'), 'the prompt');
  tmux('send-keys', '-l', 'Where is the retry backoff? Where is the LruCache class? What does the README say?');
  tmux('send-keys', 'Enter');
  waitScreen((s) => s.includes('· 1 queued'), 'the jobs');
  tmux('send-keys', '-l', '/bg start which files mention a cache?');
  tmux('send-keys', 'Enter');
  tmux('send-keys', 'F3');
  waitScreen((s) => /▸ (grep|read_file|list_dir)/.test(s) && s.includes('Background agents · 4 jobs'), 'the panel with tools');
  // Trailing blank rows of the pane are left out of the picture.
  const ansi = tmux('capture-pane', '-p', '-e').replace(/(\n\s*)+$/, '\n');
  const html = `<!doctype html><meta charset="utf-8"><style>
    body { margin: 0; background: #1e1e1e; }
    pre { margin: 0; padding: 14px 16px; color: #d4d4d4; background: #1e1e1e; font: 14px/1.17 'DejaVu Sans Mono', monospace; display: inline-block; }
  </style><pre id="term">${ansiToHtml(ansi)}</pre>`;
  const profile = mkdtempSync(path.join(tmpdir(), 'forkpool-chromium-'));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
    viewport: { width: 1200, height: 800 },
  });
  try {
    const page = context.pages()[0] ?? (await context.newPage());
    await page.setContent(html);
    await page.locator('#term').screenshot({ path: out });
  } finally {
    await context.close();
    rmSync(profile, { recursive: true, force: true });
  }
  tmux('send-keys', '-l', '/quit');
  tmux('send-keys', 'Enter');
  console.log(`wrote ${out}`);
} finally {
  try {
    tmux('kill-server');
  } catch {
    // No server left to kill.
  }
  rmSync(work, { recursive: true, force: true });
}

/** SGR colours and styles of a tmux capture as HTML spans; everything else escaped. */
function ansiToHtml(text) {
  const palette = [
    '#1e1e1e',
    '#f14c4c',
    '#23d18b',
    '#f5f543',
    '#3b8eea',
    '#d670d6',
    '#29b8db',
    '#e5e5e5',
    '#666666',
    '#f14c4c',
    '#23d18b',
    '#f5f543',
    '#3b8eea',
    '#d670d6',
    '#29b8db',
    '#ffffff',
  ];
  const escape = (s) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
  let style = {};
  let html = '';
  let open = false;
  const css = () => {
    const fg = style.inverse ? (style.bg ?? '#1e1e1e') : style.fg;
    const bg = style.inverse ? (style.fg ?? '#d4d4d4') : style.bg;
    return [fg && `color:${fg}`, bg && `background:${bg}`, style.bold && 'font-weight:bold', style.dim && 'opacity:.6'].filter(Boolean).join(';');
  };
  for (const part of text.split(/(\x1b\[[0-9;]*m)/)) {
    const sgr = /^\x1b\[([0-9;]*)m$/.exec(part);
    if (!sgr) {
      html += escape(part.replace(/\x1b\[[0-9;?]*[A-Za-z]/g, ''));
      continue;
    }
    const codes = sgr[1] === '' ? [0] : sgr[1].split(';').map(Number);
    for (let i = 0; i < codes.length; i++) {
      const c = codes[i];
      if (c === 0) style = {};
      else if (c === 1) style.bold = true;
      else if (c === 2) style.dim = true;
      else if (c === 22) style.bold = style.dim = false;
      else if (c === 7) style.inverse = true;
      else if (c === 27) style.inverse = false;
      else if (c >= 30 && c <= 37) style.fg = palette[c - 30];
      else if (c >= 90 && c <= 97) style.fg = palette[c - 82];
      else if (c === 39) delete style.fg;
      else if (c >= 40 && c <= 47) style.bg = palette[c - 40];
      else if (c === 49) delete style.bg;
      else if ((c === 38 || c === 48) && codes[i + 1] === 5) {
        const n = codes[i + 2];
        const color = n < 16 ? palette[n] : `hsl(${(n * 37) % 360},60%,60%)`;
        if (c === 38) style.fg = color;
        else style.bg = color;
        i += 2;
      } else if ((c === 38 || c === 48) && codes[i + 1] === 2) {
        const color = `rgb(${codes[i + 2]},${codes[i + 3]},${codes[i + 4]})`;
        if (c === 38) style.fg = color;
        else style.bg = color;
        i += 4;
      }
    }
    if (open) html += '</span>';
    html += `<span style="${css()}">`;
    open = true;
  }
  return open ? `${html}</span>` : html;
}
