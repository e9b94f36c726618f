/**
 * `--api` on the CLI (issue 36 §3): a run on the Responses or Anthropic wire against the
 * simulator (the built CLI in a child process, build first).
 */
import { describe, expect, it } from 'vitest';
import { startSimServer } from '../../src/sim/index.js';
import { useCleanup } from '../helpers/cleanup.js';
import { describeResult, runCli } from '../helpers/cli.js';
import { tempWorkspace } from '../helpers/config.js';

const cleanup = useCleanup();
const ANTHROPIC_KEY = 'sk-ant-cli-test-5c3e7a9d21';

describe('--api', () => {
  it.each(['responses', 'anthropic'] as const)('run --api %s speaks that wire to --base-url, and the key stays out of the output', async (api) => {
    const sim = await startSimServer({ recordBodies: true });
    cleanup.add(() => sim.close());
    const cwd = tempWorkspace({ 'src/retry.ts': '// Retry with exponential backoff.\nexport function retryBackoff() {}\n' }, cleanup);
    const result = await runCli(['run', '--api', api, '--base-url', sim.url, '--log-level', 'debug', 'Where is the retry backoff implemented?'], {
      cwd,
      cleanup,
      env: { ANTHROPIC_API_KEY: ANTHROPIC_KEY },
    });
    expect(result.code, describeResult(result)).toBe(0);
    expect(sim.requests.length).toBeGreaterThan(0);
    expect(sim.requests.every((r) => r.wire === api)).toBe(true);
    expect(result.stdout + result.stderr).not.toContain(ANTHROPIC_KEY);
  });

  it('an unknown --api is a usage error naming the choices', async () => {
    const result = await runCli(['run', '--api', 'gemini', 'hello'], { cleanup });
    expect(result.code).not.toBe(0);
    expect(result.stderr).toContain("argument 'gemini' is invalid. Allowed choices are chat, responses, anthropic.");
  });
});
