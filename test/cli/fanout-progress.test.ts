/**
 * `forkpool fanout` on a terminal (a pty from util-linux's `script`): the live status line on
 * stderr is a progress bar over the input file's task lines, with the rate and an ETA, and it
 * reaches 100% of them (the blank line is no task, the invalid one is handled); stdout, sent to
 * a file, holds only the JSON lines.
 */
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { useCleanup } from '../helpers/cleanup.js';
import { CLI_PATH, cliEnv, parseJsonLines } from '../helpers/cli.js';
import { tempWorkspace } from '../helpers/config.js';
import { runs, skipWithout } from '../helpers/system.js';

const cleanup = useCleanup();
const hasScript = runs('script', ['--version']);

/** Runs `command` on a pty 200 columns wide; resolves with everything the terminal showed. */
function onTerminal(command: string, cwd: string): Promise<{ code: number | null; screen: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn('script', ['-qfec', `stty cols 200; ${command}`, '/dev/null'], { cwd, env: cliEnv(), stdio: ['ignore', 'pipe', 'pipe'] });
    let screen = '';
    child.stdout.on('data', (chunk: Buffer) => (screen += chunk.toString('utf8')));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, screen }));
  });
}

describe.skipIf(skipWithout('script (util-linux)', hasScript, 'apt-get install bsdutils'))('forkpool fanout on a terminal', () => {
  it('draws a bar over the file’s task lines, with rate and ETA, and ends at 100%', async () => {
    const tasks = Array.from({ length: 12 }, (_, i) => JSON.stringify({ task: `where is thing ${i}?` }));
    const ws = tempWorkspace({ 'tasks.jsonl': [...tasks.slice(0, 6), '', ...tasks.slice(6), 'not json', ''].join('\n') }, cleanup);
    const { code, screen } = await onTerminal(`node ${CLI_PATH} fanout tasks.jsonl --sim-latency 20 > out.jsonl`, ws);
    // The invalid line fails the run (exit 1), after every job has ended.
    expect(code, screen).toBe(1);
    const drawn = screen.split(/\r|\n|\u001b\[2K/).filter((line) => line.includes('fanout: ') && line.includes('|'));
    // 13 task lines: 12 jobs and one invalid line; the blank line is not counted.
    expect(
      drawn.some((line) => /fanout: [█░]{20} \d+% \d+\/13 \| .* \| \d+\.\d\/s \| (ETA \S+|done) \|/.test(line)),
      screen,
    ).toBe(true);
    expect(
      drawn.some((line) => line.includes('100% 13/13') && line.includes('| done |')),
      screen,
    ).toBe(true);
    expect(parseJsonLines(readFileSync(path.join(ws, 'out.jsonl'), 'utf8'))).toHaveLength(12);
  }, 120_000);
});
