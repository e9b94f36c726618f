/**
 * The suite-wide host-fault check (test/setup/host-faults.ts) can fail: vitest runs its probes
 * (test/fixtures/host-faults/faults.probe.ts) with the suite's setup file, and every probe that
 * prints a host fault fails, the one that opted out and the clean one pass.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { expect, it } from 'vitest';
import { REPO_ROOT } from '../helpers/cli.js';

it('a probe that prints a FORKPOOL_HOST_FAULT warning, a worker thread that prints a stack overflow and an unhandled rejection each fail their test; an opted-out one passes', async () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'fp-host-faults-'));
  try {
    const out = path.join(dir, 'report.json');
    const child = spawn(
      process.execPath,
      [
        path.join(REPO_ROOT, 'node_modules/vitest/vitest.mjs'),
        'run',
        '--config',
        'test/fixtures/host-faults/vitest.config.ts',
        '--reporter=json',
        `--outputFile=${out}`,
      ],
      { cwd: REPO_ROOT, stdio: ['ignore', 'ignore', 'pipe'] },
    );
    child.stderr.resume();
    const code = await new Promise<number | null>((resolve) => child.once('close', resolve));
    expect(code).toBe(1);
    const report = JSON.parse(readFileSync(out, 'utf8')) as {
      testResults: Array<{ assertionResults: Array<{ title: string; status: string; failureMessages: string[] }> }>;
    };
    const results = report.testResults.flatMap((file) => file.assertionResults);
    expect(Object.fromEntries(results.map((r) => [r.title, r.status]))).toEqual({
      'probe: a FORKPOOL_HOST_FAULT warning of this thread': 'failed',
      'probe: a stack overflow a worker thread printed': 'failed',
      'probe: an unhandled rejection': 'failed',
      'probe: opted out, the same warning is allowed': 'passed',
      'probe: a clean test': 'passed',
    });
    for (const failed of results.filter((r) => r.status === 'failed'))
      expect(failed.failureMessages.join('\n')).toContain('host fault(s) printed during this test');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
