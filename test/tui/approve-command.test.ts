/**
 * Approvals in the chat without a screen: a real session (its jobs in the Piscina pool) on the
 * sim, `approvals: "ask"`. A job of yours asks to write a file: a line shows the question (job,
 * tool, what it does, how to answer); `/bg approve <id|name> [always]` and `/bg deny <id> [reason]`
 * answer it as by `chat`; a job that waits for nothing, an unknown job and a bad word are said.
 */
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { AgentSession } from '../../src/main/session/agent-session.js';
import { ChatController } from '../../src/tui/controller.js';
import { isControlLine, runLineMode } from '../../src/tui/line-mode.js';
import { HELP_LINES } from '../../src/tui/commands.js';
import { ended, makeConfig, makeWorkspace, startSim, toolMessagesOf, useCleanup, waitFor, watchManager } from '../helpers/index.js';

const cleanups = useCleanup();

const write = (file: string) => ({ toolCalls: [{ name: 'write_file', arguments: { path: file, content: `from the chat ${file}\n` } }] });

describe('/bg approve and /bg deny', () => {
  it('shows the question, allows it for the session by chat, denies the next one with its reason, and says what cannot be answered', async () => {
    const root = await makeWorkspace(cleanups);
    // Three jobs of yours, one after the other; each ending starts a follow-up turn (its answer after the job's).
    const sim = await startSim(cleanups, {
      script: [
        write('a.txt'),
        { content: 'Wrote a.txt.' },
        { content: 'Noted.' },
        write('b.txt'),
        { content: 'Left b.txt alone.' },
        { content: 'Noted.' },
        write('c.txt'),
        { content: 'Wrote c.txt.' },
        { content: 'Noted.' },
      ],
    });
    const session = new AgentSession({ config: makeConfig(sim, root, { maxConcurrent: 1 }, { approvals: 'ask' }), closeExecutor: true });
    watchManager(session.manager);
    cleanups.add(() => session.close({ timeoutMs: 2_000 }));
    const chat = new ChatController({ session, closeTimeoutMs: 2_000 });
    const said = () => chat.entries.map((e) => e.text);
    const lineWith = async (text: string) => {
      await waitFor(() => said().some((line) => line.includes(text)), `a line with ${JSON.stringify(text)}`);
      return said().find((line) => line.includes(text)) as string;
    };
    /** The job's end and the follow-up turn it starts: the next job's model calls are its own. */
    const endedAndIdle = async (id: string) => {
      const record = await ended(session.manager, id);
      await session.onIdle();
      return record;
    };

    chat.submitLine('/bg approve bg-1');
    await lineWith('no background job with id or name "bg-1"');

    chat.submitLine('/bg start write a.txt');
    const question = await lineWith('⏸ bg-1');
    expect(question).toMatch(/^⏸ bg-1 "write a\.txt" asks to run write_file: .*a\.txt.* — \/bg approve bg-1 \[always\] · \/bg deny bg-1 \[reason\]$/);
    expect(session.manager.approvals().map((p) => [p.jobId, p.tool])).toEqual([['bg-1', 'write_file']]);
    // The job list says it waits (it holds no slot meanwhile).
    chat.submitLine('/bg list');
    expect(await lineWith('bg-1     awaiting-approval')).toContain('"write a.txt"');
    chat.submitLine('/bg approve bg-1 sometimes');
    await lineWith('usage: /bg approve <id|name> [always]');
    expect(session.manager.approvals()).toHaveLength(1);

    // Allowed once, by chat: that call runs.
    chat.submitLine('/bg approve bg-1');
    expect(await lineWith('✓ bg-1')).toBe('✓ bg-1 write_file allowed by chat');
    const first = await endedAndIdle('bg-1');
    expect(first.status).toBe('ok');
    expect(first.approvals).toMatchObject([{ tool: 'write_file', decision: 'allow', by: 'chat' }]);
    expect(first.approvals?.[0]?.remember).toBeUndefined();
    expect(readFileSync(path.join(root, 'a.txt'), 'utf8')).toBe('from the chat a.txt\n');
    chat.submitLine('/bg deny bg-1');
    await lineWith('bg-1 "write a.txt" is not waiting for an approval');

    // Denied with a reason: the file is not written, the job's model reads why.
    chat.submitLine('/bg start write b.txt');
    await lineWith('⏸ bg-2');
    chat.submitLine('/bg deny bg-2 not this file');
    expect(await lineWith('✗ bg-2')).toBe('✗ bg-2 write_file denied by chat: not this file');
    expect((await endedAndIdle('bg-2')).approvals).toMatchObject([{ decision: 'deny', by: 'chat', reason: 'not this file' }]);
    expect(existsSync(path.join(root, 'b.txt'))).toBe(false);
    expect(sim.requests.map((r) => toolMessagesOf(r.body as never).join('\n')).join('\n')).toContain('not this file');

    // always: allowed for the session.
    chat.submitLine('/bg start write c.txt');
    await lineWith('⏸ bg-3');
    chat.submitLine('/bg approve bg-3 always');
    expect(await lineWith('✓ bg-3')).toBe('✓ bg-3 write_file allowed for the session by chat');
    expect((await endedAndIdle('bg-3')).approvals).toMatchObject([{ decision: 'allow', by: 'chat', remember: 'session' }]);
    expect(readFileSync(path.join(root, 'c.txt'), 'utf8')).toBe('from the chat c.txt\n');
  });

  it('line mode: /bg approve is answered at once while a turn waits for that very job (no deadlock)', async () => {
    const root = await makeWorkspace(cleanups);
    const sim = await startSim(cleanups, {
      script: [
        write('a.txt'),
        // The parent's turn waits for the job, which waits for its approval.
        { toolCalls: [{ name: 'wait_background_agents', arguments: { jobs: ['bg-1'], timeout_ms: 50_000 } }] },
        // The job's answer and the parent's, in whichever order they ask.
        { content: 'Done.' },
        { content: 'Done.' },
        { content: 'Done.' },
      ],
    });
    const session = new AgentSession({ config: makeConfig(sim, root, {}, { approvals: 'ask' }), closeExecutor: true });
    watchManager(session.manager);
    cleanups.add(() => session.close({ timeoutMs: 2_000 }));
    const chat = new ChatController({ session, closeTimeoutMs: 2_000 });
    const input = new PassThrough();
    const out: Array<{ line: string; busy: boolean }> = [];
    const running = runLineMode(chat, { input, out: (line) => out.push({ line, busy: chat.busy }), note: (line) => out.push({ line, busy: chat.busy }) });

    input.write('/bg start write a.txt\n');
    await waitFor(() => session.manager.approvals().length === 1, 'bg-1 to ask');
    input.write('Wait for bg-1, then tell me.\n');
    await waitFor(() => sim.requests.length === 2 && chat.busy, 'the turn waiting for bg-1');
    input.write('/bg approve bg-1\n');
    await waitFor(() => out.find((o) => o.line.startsWith('✓ bg-1 write_file allowed by chat')), 'the approval answered');
    // Answered while the turn still ran: it did not wait behind the turn that waits for the job.
    expect(out.find((o) => o.line.startsWith('✓ bg-1 write_file allowed by chat'))?.busy).toBe(true);
    expect((await ended(session.manager, 'bg-1')).status).toBe('ok');
    expect(readFileSync(path.join(root, 'a.txt'), 'utf8')).toBe('from the chat a.txt\n');
    input.end();
    await running;
  }, 60_000);

  it('is in /help and answered at once in line mode (a control line), even while a turn runs', () => {
    expect(HELP_LINES.filter((line) => /^\/bg (approve|deny) /.test(line))).toHaveLength(2);
    expect(isControlLine('/bg approve bg-1 always')).toBe(true);
    expect(isControlLine('/bg deny scout not now')).toBe(true);
  });
});
