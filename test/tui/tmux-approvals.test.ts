/**
 * Approvals in `forkpool chat` end to end: the built binary in a real terminal (tmux), keys sent
 * as a person types them, the screen read back. A scripted loopback model makes a job of yours
 * ask to write a file (`approvals: "ask"`); the question shows as a line and as a box above the
 * input; `/bg approve … always` answers it, the box goes, the file is written, the job lands.
 */
import { readFileSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { CLI_PATH, hasTmux, makeWorkspace, startSim, startTmux, useCleanup } from '../helpers/index.js';

const cleanup = useCleanup();

describe.skipIf(!hasTmux())('approvals in the chat (tmux)', () => {
  it('shows the waiting call with how to answer, /bg approve always runs it, and the prompt goes', { timeout: 120_000 }, async () => {
    const ws = await makeWorkspace(cleanup);
    const sim = await startSim(cleanup, {
      script: [
        { toolCalls: [{ name: 'write_file', arguments: { path: 'notes.txt', content: 'approved in tmux\n' } }] },
        { content: 'Wrote notes.txt.' },
        // The follow-up turn the job's ending starts.
        { content: 'Your job wrote notes.txt.' },
      ],
    });
    await writeFile(path.join(ws, 'forkpool.config.json'), JSON.stringify({ approvals: 'ask', maxRetries: 0 }));
    const pane = await startTmux(cleanup, [process.execPath, CLI_PATH, 'chat', '--base-url', sim.url], { cwd: ws, env: { OPENAI_API_KEY: 'test-key' } });
    await pane.screen('ask something, or /help', { visible: true });

    await pane.type('/bg start write the notes');
    await pane.keys('Enter');
    // ink wraps the line at the pane's width: up to the deny command it is on one row.
    await pane.screen(/⏸ bg-1 "write the notes" asks to run write_file: write notes\.txt \(17 bytes\) — \/bg approve bg-1 \[always\] · \/bg deny bg-1/);
    const box = await pane.screen('1 background tool call waits for your answer', { visible: true });
    expect(box).toMatch(/bg-1 "write the notes" wants write_file/);

    await pane.type('/bg approve bg-1 always');
    await pane.keys('Enter');
    await pane.screen('✓ bg-1 write_file allowed for the session by chat');
    await pane.screen(/✓ bg-1 "write the notes" ok/);
    await pane.screen((s) => !s.includes('waits for your answer'), { visible: true, what: 'the approval prompt gone' });
    expect(readFileSync(path.join(ws, 'notes.txt'), 'utf8')).toBe('approved in tmux\n');

    await pane.type('/quit');
    await pane.keys('Enter');
    expect(await pane.exited()).toBe(0);
  });
});
