/**
 * `forkpool jobs show ID --ledger FILE [--json]` (src/cli/jobs.ts), as a person runs it: a
 * fan-out on a scripted simulator with a durable ledger, then its job's transcript read back by
 * a second process, step by step, escaped; the API key planted in a file a tool read never in it.
 */
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { useCleanup } from '../helpers/cleanup.js';
import { runCli } from '../helpers/cli.js';
import { tempWorkspace } from '../helpers/config.js';
import { startSim } from '../helpers/sim.js';

const SECRET = 'sk-cli-transcript-secret-0123456789';

describe('forkpool jobs show', () => {
  const cleanup = useCleanup();

  it("prints a finished fan-out job's transcript from its ledger, escaped and without the key; --json gives the same steps", async () => {
    const sim = await startSim(cleanup, {
      script: [
        { content: 'Looking \u001b]0;pwned\u0007 around.', toolCalls: [{ name: 'grep', arguments: { pattern: 'retry' } }] },
        { toolCalls: [{ name: 'read_file', arguments: { path: 'leak.txt' } }] },
        { content: 'It is in retry.ts.' },
      ],
    });
    const dir = tempWorkspace({ 'ws/retry.ts': 'export function retryBackoff() {}\n', 'ws/leak.txt': `key=${SECRET}\n` }, cleanup);
    writeFileSync(path.join(dir, 'tasks.jsonl'), '{"task":"Where is the retry backoff?","label":"backoff"}\n');
    const env = { OPENAI_API_KEY: SECRET };
    const ran = await runCli(['fanout', 'tasks.jsonl', '--no-progress', '--base-url', sim.url, '--workspace', 'ws', '--ledger', 'l.db'], {
      cwd: dir,
      cleanup,
      env,
    });
    expect(ran.code, ran.stderr).toBe(0);

    const shown = await runCli(['jobs', 'show', 'bg-1', '--ledger', 'l.db'], { cwd: dir, cleanup });
    expect(shown.code, shown.stderr).toBe(0);
    const lines = shown.stdout.split('\n');
    expect(lines[0]).toMatch(/^✓ bg-1 "backoff" ok/);
    expect(lines[1]).toBe('transcript: 5 step(s)');
    // Its place in the agent tree (issue 38, B20): a top-level job with no name or agent, by its id.
    expect(lines[2]).toBe('branch: bg.bg-1');
    const heads = lines.filter((l) => l.startsWith('#'));
    expect(heads).toHaveLength(5);
    expect(heads[0]).toMatch(/^#1 model \d+\.\d s \d+ tok → grep \{"pattern":"retry"\}$/);
    expect(heads[1]).toMatch(/^#2 tool grep \d+\.\d s: 1 line$/);
    expect(heads[2]).toMatch(/^#3 model .* → read_file \{"path":"leak.txt"\}$/);
    expect(heads[3]).toMatch(/^#4 tool read_file/);
    expect(heads[4]).toMatch(/^#5 model .* \(answer\)$/);
    // The model's escape sequence is shown, not sent to the terminal; the key is redacted.
    expect(shown.stdout).toContain('Looking \\u001b]0;pwned\\u0007 around.');
    expect(shown.stdout).not.toContain('\u001b');
    expect(shown.stdout).toMatch(/key=\[REDACTED\]/);
    expect(shown.stdout).not.toContain(SECRET);

    const json = await runCli(['jobs', 'show', 'bg-1', '--ledger', 'l.db', '--json'], { cwd: dir, cleanup });
    expect(json.code, json.stderr).toBe(0);
    expect(json.stdout).not.toContain(SECRET);
    const parsed = JSON.parse(json.stdout) as {
      scope: string;
      job: { id: string; branch?: string };
      transcript: { branch?: string; total: number; steps: Array<{ n: number; kind: string }> };
    };
    expect(parsed.scope).toBe('fanout');
    expect(parsed.job.id).toBe('bg-1');
    expect([parsed.job.branch, parsed.transcript.branch]).toEqual(['bg.bg-1', 'bg.bg-1']);
    expect(parsed.transcript.steps.map((s) => `${s.n}:${s.kind}`)).toEqual(['1:model', '2:tool', '3:model', '4:tool', '5:model']);

    // An unknown job, and a missing ledger: exit 2 with the reason.
    const unknown = await runCli(['jobs', 'show', 'bg-9', '--ledger', 'l.db'], { cwd: dir, cleanup });
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toMatch(/no job "bg-9" in "l\.db"/);
    const missing = await runCli(['jobs', 'show', 'bg-1', '--ledger', 'nope.db'], { cwd: dir, cleanup });
    expect(missing.code).toBe(2);
    expect(missing.stderr).toMatch(/no ledger file "nope\.db"/);
  });
});
