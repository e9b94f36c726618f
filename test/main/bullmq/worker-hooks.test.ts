/**
 * Issue 37 (hooks): a BullMQ worker runs its own config's hooks for the jobs it runs, never the
 * producer's (a producer's config cannot make a worker run a command). `forkpool worker` is a
 * real process; the hook is a real `sh` script.
 */
import { chmodSync, existsSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ended, makeWorkspace, skipWithoutRedis, startBullmqPair, toolMessagesOf, useCleanup } from '../../helpers/index.js';

const cleanup = useCleanup();

function hook(dir: string, name: string, body: string): string {
  const file = path.join(dir, name);
  writeFileSync(file, `#!/bin/sh\n${body}\n`);
  chmodSync(file, 0o755);
  return file;
}

describe.skipIf(skipWithoutRedis())('bullmq: a worker runs its own hooks', { timeout: 180_000 }, () => {
  it("the worker's PreToolUse blocks the job's call; the producer's hook never runs there", async () => {
    const hooksDir = await makeWorkspace(cleanup);
    const producerMarker = path.join(hooksDir, 'producer-hook-ran');
    const workerHook = hook(hooksDir, 'worker.sh', 'cat > /dev/null; echo "blocked by the worker policy" >&2; exit 2');
    const producerHook = hook(hooksDir, 'producer.sh', `cat > /dev/null; touch ${producerMarker}; echo '{"additionalContext":"producer"}'`);
    const { sim, manager } = await startBullmqPair(cleanup, {
      sim: { script: [{ toolCalls: [{ name: 'read_file', arguments: JSON.stringify({ path: 'README.md' }), id: 'c1' }] }, { content: 'could not read' }] },
      worker: { concurrency: 1, config: { sandbox: 'none', hooks: { PreToolUse: [{ matcher: 'read_file', command: workerHook }] } } },
      producer: { config: { sandbox: 'none', hooks: { PreToolUse: [{ command: producerHook }] } } },
    });
    const job = manager.spawn({ task: 'read the readme', label: 'remote' });
    expect(await ended(manager, job.id)).toMatchObject({ status: 'ok', resultText: 'could not read' });
    expect(toolMessagesOf(sim.requests[1]?.body)).toEqual(['Error: blocked by a PreToolUse hook: blocked by the worker policy']);
    expect(existsSync(producerMarker)).toBe(false);
  });
});
