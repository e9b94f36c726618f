/**
 * A session killed during its first turn keeps that turn's prompt: the prompt is written before
 * the turn runs, and the resumed conversation holds it (with a note where the answer would be),
 * so the jobs that turn started answer a question the conversation asked.
 */
import { spawn } from 'node:child_process';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { AgentSession } from '../../../src/main/session/agent-session.js';
import { INTERRUPTED_TURN_ANSWER } from '../../../src/main/session/session.js';
import { REPO_ROOT, ledgerFile, makeWorkspace, requireBuiltCli, startSim, testConfig, useCleanup } from '../../helpers/index.js';

requireBuiltCli();
const CHILD = path.join(REPO_ROOT, 'test', 'fixtures', 'durable-first-turn-child.mjs');

describe('a session killed during its first turn', () => {
  const cleanup = useCleanup();

  it('is resumed with that turn’s prompt in its conversation, and goes on', async () => {
    // The first answer is held for a minute: the kill lands while the turn runs.
    const sim = await startSim(cleanup, { latencyMs: 60_000 });
    const workspace = await makeWorkspace(cleanup);
    const file = ledgerFile(cleanup);
    const child = spawn(process.execPath, [CHILD, file, sim.url, workspace], { stdio: ['ignore', 'pipe', 'inherit'] });
    cleanup.add(() => void child.kill('SIGKILL'));
    await new Promise<void>((resolve, reject) => {
      child.stdout.on('data', (chunk: Buffer) => chunk.toString().includes('submitted') && resolve());
      child.on('exit', (code) => reject(new Error(`the child exited (${code}) before its turn ran`)));
    });
    const exited = new Promise((resolve) => child.on('exit', resolve));
    child.kill('SIGKILL');
    await exited;

    sim.setOptions({ latencyMs: 0 });
    const session = AgentSession.resume('first-turn', {
      config: testConfig({ baseUrl: sim.url, workspaceRoot: workspace, ledger: { path: file } }),
      background: false,
    });
    cleanup.add(() => session.close({ timeoutMs: 2_000 }));
    const messages = session.agent.session.messages;
    const prompt = messages.findIndex((m) => m.role === 'user' && typeof m.content === 'string' && m.content.includes('the prompt a crash must not lose'));
    expect(prompt, JSON.stringify(messages)).toBeGreaterThan(0);
    expect(messages[prompt + 1]).toEqual({ role: 'assistant', content: INTERRUPTED_TURN_ANSWER });
    expect(session.agent.session.turns).toBe(1);
    // The session goes on: its next turn runs after the interrupted one.
    const next = await session.submit('And the LruCache class?');
    expect(next.turn).toBe(2);
  }, 60_000);
});
