/**
 * bash without a sandbox (`sandbox: "none"`) can read the environment forkpool started with, at
 * /proc/$PPID/environ: the server token, the model key, any exported password. Every credential
 * there is redacted from the tool result the model is sent, the job's transcript and its result;
 * and the command's own environment is the short list the sandbox gets, not the host's. The CLI
 * runs as a real process (so its start environment holds the secrets), jobs in the real pool.
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { mkdtemp, realpath, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { useCleanup } from '../helpers/cleanup.js';
import { describeResult, jsonl, requireBuiltCli, runCli } from '../helpers/cli.js';
import { makeWorkspace } from '../helpers/config.js';
import { toolResultsSent } from '../helpers/requests.js';
import { startSim } from '../helpers/sim.js';

const cleanups = useCleanup();
requireBuiltCli();

const KEY = 'sk-forkpool-unsandboxed-KEY-0451';
const SERVER_TOKEN = 'srv-token-unsandboxed-7d2c9e4f1a8b';
const PASSWORD = 'deploy-pw-unsandboxed-93kq';
const HOST_ONLY = 'plain-host-value-3310';

describe('bash with sandbox "none"', () => {
  it('cat /proc/$PPID/environ and env: no server token, key or password in the tool result, transcript or result; no host variable in its environment', async () => {
    const command = 'tr "\\0" "\\n" < /proc/$PPID/environ; echo ---; env';
    const sim = await startSim(cleanups, { script: [{ toolCalls: [{ name: 'bash', arguments: { command } }] }, { content: 'done' }] });
    const cwd = await makeWorkspace(cleanups);
    const outside = await realpath(await mkdtemp(path.join(os.tmpdir(), 'forkpool-unsandboxed-')));
    cleanups.add(() => rm(outside, { recursive: true, force: true }));
    const configFile = path.join(outside, 'forkpool.config.json');
    writeFileSync(configFile, JSON.stringify({ sandbox: 'none', grantedTools: ['bash'] }));
    writeFileSync(path.join(cwd, 'one.jsonl'), jsonl([{ task: 'Print the environment.' }]));
    const ledger = path.join(outside, 'ledger.db');
    const r = await runCli(['fanout', '--json', '-c', configFile, '--base-url', sim.url, '--ledger', ledger, 'one.jsonl'], {
      cwd,
      env: { OPENAI_API_KEY: KEY, FORKPOOL_SERVER_TOKEN: SERVER_TOKEN, DEPLOY_PASSWORD: PASSWORD, PLAIN_HOST_VAR: HOST_ONLY },
      cleanup: cleanups,
    });
    expect(r.code, describeResult(r)).toBe(0);
    const [result = ''] = [...toolResultsSent(sim).values()];
    const [environ = '', env = ''] = result.split('---\n');
    // The command did read forkpool's start environment: the names are there, the values are not.
    expect(environ).toContain('FORKPOOL_SERVER_TOKEN=[REDACTED]');
    expect(environ).toContain('DEPLOY_PASSWORD=[REDACTED]');
    expect(environ).toContain(`PLAIN_HOST_VAR=${HOST_ONLY}`);
    // Its own environment is the short list: no host variable, secret-looking or not.
    expect(env).toContain('PATH=');
    expect(env).not.toMatch(/FORKPOOL_|DEPLOY_PASSWORD|OPENAI_API_KEY|PLAIN_HOST_VAR/);
    expect(env).not.toContain(HOST_ONLY);
    const stored = [ledger, `${ledger}-wal`].filter((file) => existsSync(file)).map((file) => readFileSync(file).toString('latin1'));
    // The transcript was kept, with the command's output in it (redacted).
    expect(stored.join('')).toContain('FORKPOOL_SERVER_TOKEN=[REDACTED]');
    const places: Record<string, string> = {
      'the model requests': JSON.stringify(sim.requests.map((request) => request.body)),
      'the ledger (transcript and result)': stored.join(''),
      stdout: r.stdout,
      stderr: r.stderr,
    };
    for (const [where, text] of Object.entries(places)) {
      for (const secret of [SERVER_TOKEN, PASSWORD, KEY]) expect(text.includes(secret), `${secret} appears in ${where}`).toBe(false);
    }
  });
});
