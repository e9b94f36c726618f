/**
 * An approval survives a restart with the ledger: the host process is killed with SIGKILL
 * while its job waits for an approval; the session resumed on the same ledger (the library's
 * and the CLI's --resume path) still lists the same call, and an allow runs exactly that call
 * once (not the model call again) and the job goes on to finish.
 */
import { spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { AgentSession } from '../../../src/main/session/agent-session.js';
import { loadConfig } from '../../../src/main/setup/config-load.js';
import { CLI_PATH, REPO_ROOT, ended, ledgerFile, startSim, tempWorkspace, useCleanup } from '../../helpers/index.js';

const CHILD = path.join(REPO_ROOT, 'test', 'fixtures', 'approval-wait-child.mjs');
const cleanups = useCleanup();

/** Starts the child and SIGKILLs it once its job waits; resolves with the job and call ids it printed. */
function runUntilWaiting(args: string[]): Promise<{ jobId: string; callId: string; killed: boolean }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [CHILD, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    let found: { jobId: string; callId: string } | undefined;
    const safety = setTimeout(() => child.kill('SIGKILL'), 60_000);
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
      stdout += chunk;
      const match = /waiting (\S+) (\S+)\n/.exec(stdout);
      if (match && !found) {
        found = { jobId: match[1] as string, callId: match[2] as string };
        child.kill('SIGKILL');
      }
    });
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    child.on('close', (_code, signal) => {
      clearTimeout(safety);
      if (!found) return reject(new Error(`the child never waited for an approval:\n${stdout}\n${stderr}`));
      resolve({ ...found, killed: signal === 'SIGKILL' });
    });
  });
}

describe('approvals across a restart', () => {
  it('kill -9 while a job awaits approval; after --resume it still waits on the same call, and an allow runs that call once', async () => {
    expect(existsSync(CLI_PATH), 'run "npm run build" first').toBe(true);
    const workspace = tempWorkspace({ 'README.md': '# demo\n' }, cleanups);
    const file = ledgerFile(cleanups, 'approvals.db');
    const sim = await startSim(cleanups, {
      script: [
        { content: 'Appending now.', toolCalls: [{ id: 'call-append', name: 'bash', arguments: { command: 'echo once >> ran.txt; echo appended' } }] },
        { content: 'Appended the line.' },
      ],
    });
    const waited = await runUntilWaiting([file, sim.url, workspace]);
    expect(waited.killed).toBe(true);
    expect(waited.callId).toBe('call-append');
    expect(sim.requests.length).toBe(1);

    const config = loadConfig({
      config: {
        baseUrl: sim.url,
        workspaceRoot: workspace,
        model: 'forkpool-sim',
        maxRetries: 0,
        sandbox: 'none',
        approvals: 'ask',
        tools: ['bash', 'read_file'],
        ledger: { path: file },
      },
    });
    const session = new AgentSession({ config, sessionId: 'approval-test', resume: true, background: false });
    cleanups.add(() => session.close());
    const { manager } = session;
    expect(manager.recovery?.awaitingApproval).toEqual([waited.jobId]);
    expect(manager.approvals().map((p) => [p.jobId, p.callId, p.tool])).toEqual([[waited.jobId, 'call-append', 'bash']]);
    expect(manager.get(waited.jobId)?.state).toBe('running');
    // Nothing ran while it waited, and nothing runs again on its own after the restart.
    expect(existsSync(path.join(workspace, 'ran.txt'))).toBe(false);

    manager.approve(waited.jobId, 'call-append', { decision: 'allow', by: 'chat' });
    const record = await ended(manager, waited.jobId);
    expect(record.status).toBe('ok');
    expect(record.resultText).toContain('Appended the line.');
    expect(readFileSync(path.join(workspace, 'ran.txt'), 'utf8')).toBe('once\n');
    // The model was asked once more (to read the call's output), not for the call again.
    expect(sim.requests.length).toBe(2);
    const last = sim.requests[1]?.body as { messages: Array<{ role: string; tool_call_id?: string; content?: unknown }> };
    const answers = last.messages.filter((m) => m.role === 'tool');
    expect(answers.map((m) => m.tool_call_id)).toEqual(['call-append']);
    expect(String(answers[0]?.content)).toMatch(/^appended\n/);
    expect(record.approvals?.map((a) => [a.callId, a.decision, a.by])).toEqual([['call-append', 'allow', 'chat']]);
    sim.assertScriptDone();
  });
});
