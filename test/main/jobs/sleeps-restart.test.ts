/**
 * A sleeping job survives a kill -9 with the ledger, through the real CLI: a `fanout --ledger`
 * whose job (scheduler `sleep` from the config) calls schedule_next_turn is killed with SIGKILL
 * while the job sleeps; `jobs show` reads its wake time from the ledger; `fanout --resume` wakes
 * it at its original time (not at once, not never), runs its remaining turn with its kept
 * conversation, and prints its result once.
 */
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { openSqliteLedger } from '../../../src/main/ledger/sqlite-store.js';
import type { JobRecord } from '../../../src/main/ledger/ledger.js';
import { ledgerFile, makeWorkspace, parseJsonLines, spawnCli, startSim, useCleanup, waitFor } from '../../helpers/index.js';

const cleanups = useCleanup();
const TASK = 'Watch the build queue: scan it, sleep, then scan again.';
/**
 * How long the job sleeps. The test waits it out, so it is short; what must fit in it is only
 * the kill and the start of the resumed process (`jobs show` runs beside that process), so that
 * a wake at recovery would still come before the job's time.
 */
const SLEEP_S = 10;

/** The fan-out's job as the ledger on disk has it (read as `jobs show` reads it, beside the live process). */
function storedJob(file: string): Readonly<JobRecord> | undefined {
  const store = openSqliteLedger(file);
  try {
    return store.jobs('fanout').load().jobs[0]?.record;
  } finally {
    store.close();
  }
}

type Body = { messages: Array<{ role: string; content?: unknown }> };

describe('sleep across a restart', () => {
  it('kill -9 while a job sleeps; fanout --resume wakes it at its original time, runs the rest and prints its result once', async () => {
    const workspace = await makeWorkspace(cleanups);
    const file = ledgerFile(cleanups, 'sleep.db');
    const configFile = path.join(workspace, 'sleep.config.json');
    writeFileSync(configFile, JSON.stringify({ model: 'forkpool-sim', maxRetries: 0, background: { scheduler: 'sleep' } }));
    const sim = await startSim(cleanups, {
      script: [
        { toolCalls: [{ name: 'schedule_next_turn', arguments: { after: `${SLEEP_S}s`, reason: 'scan the build queue again' } }] },
        { content: 'Second scan: the queue is empty.' },
      ],
    });
    const input = JSON.stringify({ task: TASK, label: 'watcher' });
    const args = ['fanout', '-', '--config', configFile, '--base-url', sim.url, '--workspace', workspace, '--ledger', file, '--no-progress'];
    const first = spawnCli(args, { input, cleanup: cleanups });
    await waitFor(() => storedJob(file)?.sleepWait !== undefined, 'the job sleeps in the ledger', { timeoutMs: 30_000, intervalMs: 100 });
    first.child.kill('SIGKILL');
    const killed = await first.exited;
    expect(killed.signal).toBe('SIGKILL');
    expect(parseJsonLines(killed.stdout)).toEqual([]);
    const asleep = storedJob(file) as Readonly<JobRecord>;
    const at = asleep.sleepWait?.at as number;
    expect(asleep.state).toBe('running');

    // Resumed well before its time (it sleeps SLEEP_S): a wake at recovery would come before `at`.
    expect(Date.now()).toBeLessThan(at);
    const resuming = spawnCli([...args, '--resume'], { input, cleanup: cleanups, timeoutMs: 90_000 }).exited;

    // `jobs show`, beside the resumed process (the job sleeps on in the ledger): it sleeps, and until when.
    const shown = await spawnCli(['jobs', 'show', asleep.id, '--ledger', file], { cleanup: cleanups }).exited;
    expect(shown.code, shown.stderr).toBe(0);
    expect(shown.stdout).toContain(`… ${asleep.id} "watcher" running\nasleep until ${new Date(at).toISOString()}: scan the build queue again`);

    const resumed = await resuming;
    expect(resumed.code, resumed.stderr).toBe(0);
    const out = parseJsonLines(resumed.stdout) as Array<{ id: string; status: string; result: string; fromLedger?: boolean }>;
    expect(out).toEqual([expect.objectContaining({ id: asleep.id, status: 'ok', result: 'Second scan: the queue is empty.' })]);
    expect(out[0]?.fromLedger).toBeUndefined();
    // Woken at its original time, not at once; its kept conversation went on with the wake message.
    expect(sim.requests).toHaveLength(2);
    expect(sim.requests[1]?.receivedAt).toBeGreaterThanOrEqual(at);
    const messages = (sim.requests[1]?.body as Body).messages;
    expect(messages.some((m) => m.role === 'tool' && String(m.content).startsWith('Sleeping until'))).toBe(true);
    expect(messages.at(-1)).toMatchObject({ role: 'user', content: expect.stringContaining('the turn you scheduled has come (scan the build queue again)') });
    expect(storedJob(file)).toMatchObject({ state: 'ended', status: 'ok', iterations: 2 });
    sim.assertScriptDone();
  }, 180_000);
});
