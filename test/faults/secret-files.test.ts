/**
 * Secret files (issue 18, "The key in the workspace's own config file reaches the model"): with
 * the key in the workspace's forkpool.config.json (the file docs/configuration.md describes), a hostile
 * scripted job calls every tool at it, through the real pool and the real worker, with bash in
 * the real bubblewrap. Neither the key nor its reversed, base64 or hex forms may reach the
 * model (every request body the sim received) or the job's result. The second line,
 * redaction of tool output, is checked with the key in a file that is not hidden.
 */
import { linkSync, mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { AgentSession } from '../../src/main/session/agent-session.js';
import { loadConfig } from '../../src/main/setup/config-load.js';
import type { JobRecord } from '../../src/main/ledger/ledger.js';
import { BackgroundManager } from '../../src/main/jobs/manager.js';
import { openSqliteLedger } from '../../src/main/ledger/sqlite-store.js';
import type { SimServer } from '../../src/sim/index.js';
import type { ScriptToolCall } from '../../src/sim/types.js';
import {
  tempWorkspace,
  useCleanup,
  ended,
  startSim,
  watchManager,
  skipWithoutBwrap,
  callTool,
  requireBwrap,
  toolContext,
  toolResultsSent,
} from '../helpers/index.js';
import { DEFAULTS } from '../../src/shared/defaults.js';
import { bashTool } from '../../src/shared/tools/bash.js';
import { grepTool } from '../../src/shared/tools/grep.js';

const cleanups = useCleanup();

const KEY = 'sk-fpMARKER-7f3a9c21e5b04d68';
const ENV_SECRET = 'ENVSECRET-91b2c3d4e5f6a7b8';
const AGENT_KEY = 'sk-agentPEER-0c4d8e2f6a1b';
const REDIS_PASSWORD = 'redisPASS-5e9f3a7b1c';

/**
 * Every 8-character piece of each form a command could turn a secret into: as is, reversed,
 * hex, and base64 at each byte alignment (only the characters that depend on the secret alone).
 */
function leakedPieces(secret: string): string[] {
  const bytes = Buffer.from(secret);
  const forms = [secret, [...secret].reverse().join(''), bytes.toString('hex')];
  for (let offset = 0; offset < 3; offset++) {
    const encoded = Buffer.concat([Buffer.alloc(offset, 0x20), bytes]).toString('base64');
    forms.push(encoded.slice(Math.ceil((offset * 8) / 6), Math.floor(((offset + bytes.length) * 8) / 6)));
  }
  return forms.flatMap((form) => Array.from({ length: form.length - 7 }, (_, i) => form.slice(i, i + 8)));
}

/** What the model was given (every message but its own, in every request) and what the jobs answered. */
function expectNothingLeaked(sim: SimServer, records: readonly JobRecord[], secrets: readonly string[]): void {
  const given = sim.requests.flatMap((r) =>
    ((r.body as { messages?: Array<{ role: string; content?: unknown }> } | undefined)?.messages ?? []).filter((m) => m.role !== 'assistant'),
  );
  const seen = { 'the model': JSON.stringify(given), 'the job results': JSON.stringify(records.map((r) => [r.resultText, r.error])) };
  expect(seen['the model']).toContain('"role":"tool"');
  for (const secret of secrets) {
    for (const piece of leakedPieces(secret)) {
      for (const [where, text] of Object.entries(seen)) expect(text.includes(piece), `${JSON.stringify(piece)} (from ${secret}) reached ${where}`).toBe(false);
    }
  }
}

const call = (id: string, name: string, args: Record<string, unknown>): ScriptToolCall => ({ id, name, arguments: args });

/** A workspace holding the key in its config file (the forkpool.config.json docs/configuration.md describes) and a .env; the config as the CLI loads it. */
async function hostileSetup(sim: SimServer) {
  const ws = tempWorkspace(
    {
      'src/retry.ts': 'export function retryBackoff(attempt: number): number {\n  return 2 ** attempt * 100;\n}\n',
      '.env': `OPENAI_API_KEY=${ENV_SECRET}\n`,
      'pkg/a/.env.local': `TOKEN=${ENV_SECRET}\n`,
      '.env.example': 'OPENAI_API_KEY=put-yours-here\n',
    },
    cleanups,
  );
  writeFileSync(
    path.join(ws, 'forkpool.config.json'),
    JSON.stringify({ baseUrl: sim.url, apiKey: KEY, sandbox: 'bwrap', grantedTools: ['bash', 'write_file', 'edit_file'] }, null, 2),
  );
  const config = loadConfig({ file: true, cwd: ws, config: { maxRetries: 0, background: { maxConcurrent: 1, cancelGraceMs: 200, closeTimeoutMs: 5_000 } } });
  // The durable ledger, kept (against advice) inside the workspace, as a library store.
  mkdirSync(path.join(ws, 'state'));
  const ledger = openSqliteLedger(path.join(ws, 'state', 'ledger.db'));
  const manager = watchManager(new BackgroundManager({ config, store: ledger.jobs('secret-files'), closeExecutor: true }));
  cleanups.add(async () => {
    await manager.close({ timeoutMs: 2_000 });
    ledger.close();
  });
  const run = async (task: string) => ended(manager, manager.spawn({ task, label: 'hostile' }).id);
  return { ws, config, manager, run };
}

describe.skipIf(skipWithoutBwrap())('the key in the workspace config file never reaches the model', () => {
  beforeAll(requireBwrap);

  it('a hostile job: every file tool refuses or skips the hidden files, bash in bubblewrap sees them masked; no form of a key reaches the model', async () => {
    const probe = (id: string, guess: string) => call(id, 'grep', { pattern: `"apiKey": "${guess}`, path: '.' });
    const sim = await startSim(cleanups, {
      script: [
        {
          toolCalls: [
            call('bash_cat', 'bash', {
              command:
                'cat forkpool.config.json; rev forkpool.config.json; base64 forkpool.config.json; xxd forkpool.config.json; base64 .env; base64 pkg/a/.env.local; cat state/ledger.db | base64 | head -c 200; echo END',
            }),
            call('bash_copy', 'bash', {
              command:
                'ln forkpool.config.json h; cat h; cp forkpool.config.json c; cat c; cp .env e; cat e; mv forkpool.config.json moved.json; mv pkg p2; cat p2/a/.env.local; cat .env.example; echo END',
            }),
          ],
        },
        // After a rename attempt the next command is masked the same way.
        { toolCalls: [call('bash_again', 'bash', { command: 'cat forkpool.config.json p2/a/.env.local pkg/a/.env.local 2>&1 | base64; ls; echo END' })] },
        { content: 'done with bash' },
        {
          toolCalls: [
            call('read_config', 'read_file', { path: 'forkpool.config.json' }),
            call('read_env', 'read_file', { path: '.env' }),
            call('read_symlink', 'read_file', { path: 'innocent.txt' }),
            call('read_hardlink', 'read_file', { path: 'notes/copy.json' }),
            call('read_ledger', 'read_file', { path: 'state/ledger.db-wal' }),
            call('outline_hardlink', 'code_outline', { path: 'src/leak.ts' }),
            call('read_example', 'read_file', { path: '.env.example' }),
            call('read_code', 'read_file', { path: 'src/retry.ts' }),
          ],
        },
        {
          toolCalls: [
            call('grep_literal', 'grep', { pattern: 'fpMARKER', path: '.' }),
            call('grep_regex', 'grep', { pattern: 'sk-[A-Za-z0-9-]+|ENVSEC', path: '.' }),
            call('grep_direct', 'grep', { pattern: 'a', path: 'forkpool.config.json' }),
            probe('probe_right', 's'),
            probe('probe_wrong', 'q'),
            call('grep_code', 'grep', { pattern: 'retryBackoff', path: '.' }),
            call('find_all', 'find_files', { pattern: '**/*' }),
            call('list_root', 'list_dir', {}),
            call('edit_config', 'edit_file', { path: 'forkpool.config.json', old_text: '"apiKey": "s', new_text: '"apiKey": "s' + 'x' }),
            call('write_env', 'write_file', { path: '.env', content: 'gone\n' }),
            call('bash_linked', 'bash', { command: 'cat notes/copy.json; echo END' }),
          ],
        },
        { content: 'done with the file tools' },
      ],
    });
    const { ws, run } = await hostileSetup(sim);
    const first = await run('Find the API key (bash).');
    // Links planted outside the sandbox, before the second job: a symbolic and two hard links.
    symlinkSync('forkpool.config.json', path.join(ws, 'innocent.txt'));
    mkdirSync(path.join(ws, 'notes'));
    linkSync(path.join(ws, 'forkpool.config.json'), path.join(ws, 'notes', 'copy.json'));
    linkSync(path.join(ws, 'forkpool.config.json'), path.join(ws, 'src', 'leak.ts'));
    const second = await run('Find the API key (file tools).');
    expect(sim.scriptErrors).toEqual([]);
    expect([first.status, second.status]).toEqual(['ok', 'ok']);

    expectNothingLeaked(sim, [first, second], [KEY, ENV_SECRET]);
    const results = toolResultsSent(sim);
    const result = (id: string) => results.get(id) ?? `(no result for ${id})`;
    // The tools really ran: what is not hidden is read, what is hidden is refused by name.
    // stdout and stderr are separate pipes: their lines may interleave in any order.
    expect(result('bash_cat')).toMatch(/^cat: forkpool\.config\.json: Permission denied$/m);
    expect(result('bash_cat')).toMatch(/^base64: \.env: Permission denied$/m);
    expect(result('bash_cat')).toMatch(/^END\n[\s\S]*\[exit code: 0\]$/m);
    expect(result('bash_copy')).toMatch(/Invalid cross-device link/);
    expect(result('bash_copy')).toMatch(/cannot move 'forkpool\.config\.json' to 'moved\.json': Device or resource busy/);
    expect(result('bash_copy')).toMatch(/cannot move 'pkg' to 'p2': Device or resource busy/);
    expect(result('bash_copy')).toContain('put-yours-here');
    expect(result('bash_again')).toMatch(/END\n\[exit code: 0\]$/);
    for (const id of [
      'read_config',
      'read_env',
      'read_symlink',
      'read_hardlink',
      'read_ledger',
      'outline_hardlink',
      'grep_direct',
      'edit_config',
      'write_env',
    ]) {
      expect(result(id), id).toMatch(/^Error: .* is hidden from the tools/);
    }
    expect(result('read_hardlink')).toContain('another name (a hard or symbolic link) for a hidden file');
    expect(result('read_example')).toContain('put-yours-here');
    expect(result('read_code')).toContain('retryBackoff');
    expect(result('grep_code')).toContain('src/retry.ts:1:');
    // The probe: the same answer whether the guessed character is right or wrong.
    expect(result('probe_right').replace('"s', '"q')).toBe(result('probe_wrong'));
    expect(result('probe_right')).toMatch(/^No matches .*\n\[skipped .*hidden from the tools/);
    expect(result('grep_literal')).toMatch(/^No matches/);
    expect(result('find_all')).toContain('src/retry.ts');
    expect(result('find_all')).not.toMatch(/^(forkpool\.config\.json|\.env|state\/ledger\.db)$/m);
    expect(result('list_root')).toMatch(/^forkpool\.config\.json \[hidden from the tools\]$/m);
    // A hidden file with another name (planted outside the sandbox): bash refuses to run at all.
    expect(result('bash_linked')).toMatch(/^Error: bash is refused: forkpool\.config\.json is hidden from the tools .* has 3 names/);
  });

  it('a --config file of another name in a sub-folder and a folder listed in hiddenPaths: hidden by path, and masked in bash even after it tried to rename their folders', async () => {
    const sim = await startSim(cleanups, {
      script: [
        {
          toolCalls: [
            call('read_config', 'read_file', { path: 'settings/dev.json' }),
            call('read_key', 'read_file', { path: 'keys/prod.pem' }),
            call('list_keys', 'list_dir', { path: 'keys' }),
            call('find_keys', 'find_files', { pattern: '*', path: 'keys' }),
            call('grep_all', 'grep', { pattern: 'apiKey|BEGIN', path: '.' }),
            call('find_all', 'find_files', { pattern: '**/*' }),
            call('bash_rename', 'bash', {
              command:
                'cat settings/dev.json keys/prod.pem; ls -A keys; mv settings s2; mv keys k2; mv settings/dev.json settings/x.json; rm -f settings/dev.json; touch keys/new; echo END',
            }),
          ],
        },
        {
          toolCalls: [
            call('bash_after', 'bash', { command: '(cat s2/dev.json k2/prod.pem settings/dev.json keys/prod.pem settings/x.json) 2>&1 | base64; echo END' }),
          ],
        },
        { content: 'done' },
      ],
    });
    const ws = tempWorkspace({ 'keys/prod.pem': `-----BEGIN KEY-----\n${ENV_SECRET}\n`, 'README.md': 'apiKey goes in the environment\n' }, cleanups);
    mkdirSync(path.join(ws, 'settings'));
    writeFileSync(
      path.join(ws, 'settings', 'dev.json'),
      JSON.stringify({ baseUrl: sim.url, apiKey: KEY, sandbox: 'bwrap', grantedTools: ['bash'], hiddenPaths: ['keys'] }),
    );
    const config = loadConfig({
      file: 'settings/dev.json',
      cwd: ws,
      config: { maxRetries: 0, background: { maxConcurrent: 1, cancelGraceMs: 200, closeTimeoutMs: 5_000 } },
    });
    const manager = watchManager(new BackgroundManager({ config, closeExecutor: true }));
    cleanups.add(() => manager.close({ timeoutMs: 2_000 }));
    const record = await ended(manager, manager.spawn({ task: 'Find the key.', label: 'hostile' }).id);
    expect(sim.scriptErrors).toEqual([]);
    expect(record.status).toBe('ok');

    expectNothingLeaked(sim, [record], [KEY, ENV_SECRET]);
    const results = toolResultsSent(sim);
    const result = (id: string) => results.get(id) ?? `(no result for ${id})`;
    for (const id of ['read_config', 'read_key', 'list_keys', 'find_keys'])
      expect(result(id), id).toMatch(/^Error: .* is hidden from the tools \(it is forkpool's configuration or ledger, or listed in hiddenPaths\)/);
    expect(result('grep_all')).toMatch(/^README\.md:1: apiKey goes/);
    expect(result('grep_all')).toMatch(/\[skipped 1 file hidden from the tools/);
    expect(result('find_all')).toMatch(/^README\.md\n\[1 file\]\n\[1 matching file hidden/);
    expect(result('bash_rename')).toMatch(/cat: settings\/dev\.json: Permission denied\ncat: keys\/prod\.pem: No such file or directory\n/);
    expect(result('bash_rename')).toMatch(/cannot move 'settings' to 's2': Device or resource busy/);
    expect(result('bash_rename')).toMatch(/cannot move 'keys' to 'k2': Device or resource busy/);
    expect(result('bash_rename')).toMatch(/cannot move 'settings\/dev\.json' to 'settings\/x\.json': Device or resource busy/);
    expect(result('bash_rename')).toMatch(/cannot remove 'settings\/dev\.json': Device or resource busy/);
    expect(result('bash_rename')).toMatch(/cannot touch 'keys\/new': Read-only file system/);
    expect(result('bash_after')).toMatch(/END\n\[exit code: 0\]$/);
    // The config file read was added to what the config lists, resolved on the main thread.
    expect(config.hiddenPaths).toEqual([path.join(ws, 'keys'), path.join(ws, 'settings', 'dev.json')]);
  });

  it('grep skips a hard link to a hidden file, met in its walk under another name, unread (small files are opened with blocking calls: the inode is checked there too)', async () => {
    const ws = tempWorkspace({ 'keys/token.json': `{"token": "${ENV_SECRET}"}\n`, 'src/a.ts': 'token here\n' }, cleanups);
    linkSync(path.join(ws, 'keys', 'token.json'), path.join(ws, 'src', 'copy.json'));
    const ctx = toolContext(ws, { policy: { hiddenPaths: [path.join(ws, 'keys', 'token.json')] } });
    const out = await callTool(grepTool, { pattern: 'token', path: 'src' }, ctx);
    expect(out).toContain('src/a.ts:1: token here');
    expect(out).toContain('1 file hidden from the tools');
    expect(out).not.toContain(ENV_SECRET);
  });

  it('a hidden file in a sandboxReadPaths folder outside the workspace is masked too', async () => {
    const outside = tempWorkspace({ 'tool/secret.json': `{"token": "${ENV_SECRET}"}\n`, 'tool/bin.txt': 'readable\n' }, cleanups);
    const ws = tempWorkspace({ 'a.txt': 'a\n' }, cleanups);
    const secret = path.join(outside, 'tool', 'secret.json');
    const ctx = toolContext(ws, { policy: { sandbox: 'bwrap', readPaths: [path.join(outside, 'tool')], hiddenPaths: [secret] } });
    const out = await callTool(bashTool, { command: `cat ${outside}/tool/bin.txt; cat ${secret}; echo END` }, ctx);
    expect(out).toMatch(/^readable$/m);
    expect(out).toMatch(/^cat: .*secret\.json: Permission denied$/m);
    expect(out).not.toContain(ENV_SECRET);
  });

  it('a hidden file inside the read-only .git stays masked (the masks go after every other bind)', async () => {
    const ws = tempWorkspace({ '.git/config': '[core]\n', '.git/forkpool-token': `${ENV_SECRET}\n` }, cleanups);
    const ctx = toolContext(ws, { policy: { sandbox: 'bwrap', hiddenPaths: [path.join(ws, '.git', 'forkpool-token')] } });
    const out = await callTool(bashTool, { command: 'cat .git/config .git/forkpool-token; echo x >> .git/config; echo END' }, ctx);
    expect(out).toMatch(/^\[core\]$/m);
    expect(out).toMatch(/^cat: \.git\/forkpool-token: Permission denied$/m);
    expect(out).toMatch(/\.git\/config: Read-only file system$/m);
    expect(out).not.toContain(ENV_SECRET);
  });

  it('bash is refused in a workspace with more entries than it may scan for .env-style files (toolLimits.hiddenScanMaxEntries)', async () => {
    const files = Object.fromEntries(Array.from({ length: 12 }, (_, i) => [`src/f${i}.ts`, '']));
    const ws = tempWorkspace({ ...files, 'deep/.env': `TOKEN=${ENV_SECRET}\n` }, cleanups);
    const ctx = (max: number) => toolContext(ws, { limits: { ...DEFAULTS.tools, hiddenScanMaxEntries: max }, policy: { sandbox: 'bwrap' } });
    await expect(callTool(bashTool, { command: 'cat deep/.env' }, ctx(10))).rejects.toMatchObject({
      code: 'PATH_HIDDEN',
      message: expect.stringMatching(/more than 10 entries .*toolLimits\.hiddenScanMaxEntries/),
    });
    // Under the limit the same command runs, with the file masked.
    expect(await callTool(bashTool, { command: 'cat deep/.env' }, ctx(100))).toMatch(/^cat: deep\/\.env: Permission denied\n\[exit code: 1\]$/);
  });
});

describe("the parent agent's own tools (main thread)", () => {
  it("an AgentSession with the key in the workspace config and its ledger in the workspace: the parent's tools refuse both", async () => {
    const sim = await startSim(cleanups, {
      script: [
        {
          toolCalls: [
            call('parent_config', 'read_file', { path: 'forkpool.config.json' }),
            call('parent_ledger', 'read_file', { path: 'state/session.db' }),
            call('parent_grep', 'grep', { pattern: 'apiKey', path: '.' }),
            call('parent_code', 'read_file', { path: 'src/retry.ts' }),
          ],
        },
        { content: 'nothing to report' },
      ],
    });
    const ws = tempWorkspace({ 'src/retry.ts': 'export const retries = 3;\n', 'state/.keep': '' }, cleanups);
    writeFileSync(
      path.join(ws, 'forkpool.config.json'),
      JSON.stringify({ baseUrl: sim.url, apiKey: KEY, ledger: { path: path.join(ws, 'state', 'session.db'), allowInWorkspace: true } }),
    );
    const config = loadConfig({ file: true, cwd: ws, config: { maxRetries: 0 } });
    const session = new AgentSession({ config, background: false, closeExecutor: true });
    watchManager(session.manager);
    cleanups.add(() => session.close({ timeoutMs: 2_000 }));
    const turn = await session.submit('What is in the config?');
    expect(sim.scriptErrors).toEqual([]);
    expect(turn.answer).toBe('nothing to report');

    expectNothingLeaked(sim, [], [KEY]);
    const results = toolResultsSent(sim);
    expect(results.get('parent_config')).toMatch(/^Error: "forkpool\.config\.json" is hidden from the tools/);
    expect(results.get('parent_ledger')).toMatch(/^Error: "state\/session\.db" is hidden from the tools \(it is forkpool's configuration or ledger/);
    expect(results.get('parent_grep')).toMatch(/^No matches .*\n\[skipped \d+ files hidden from the tools/);
    expect(results.get('parent_code')).toContain('retries = 3');
  });
});

describe('redaction, the second line: the key in a file that is not hidden', () => {
  it("grep's cut excerpt of a long line and bash's reversed, base64 and hex forms lose every piece of 8 or more characters", async () => {
    const sim = await startSim(cleanups, {
      script: [
        {
          toolCalls: [
            call('grep_suffix', 'grep', { pattern: 'AFTERKEY', path: 'notes/long.txt' }),
            call('grep_prefix', 'grep', { pattern: 'BEFOREKEY', path: 'notes/long.txt' }),
            call('read_long', 'read_file', { path: 'notes/long.txt' }),
            call('bash_forms', 'bash', {
              command:
                'rev notes/key.txt; base64 notes/key.txt; (printf a; cat notes/key.txt) | base64; (printf ab; cat notes/key.txt) | base64; od -An -tx1 notes/key.txt | tr -d " \\n"; echo; xxd -p -c 256 notes/key.txt; base64 -w0 notes/long.txt; echo; cat notes/others.txt; rev notes/others.txt; base64 notes/others.txt; echo END',
            }),
          ],
        },
        { content: 'done' },
      ],
    });
    // One line cuts the key's tail off the excerpt (the match is far after its start), the other its head.
    const long = `${'x'.repeat(300)}${KEY}${'-'.repeat(50)}AFTERKEY${'y'.repeat(300)}\nBEFOREKEY${'z'.repeat(221)}${KEY}${'w'.repeat(300)}\n`;
    // Every key the config holds: the model key, a peer agent's, the Redis password.
    const ws = tempWorkspace({ 'notes/long.txt': long, 'notes/key.txt': `${KEY}\n`, 'notes/others.txt': `${AGENT_KEY}\n${REDIS_PASSWORD}\n` }, cleanups);
    const config = loadConfig({
      config: {
        workspaceRoot: ws,
        baseUrl: sim.url,
        apiKey: KEY,
        agents: { peer: { description: 'a peer with its own key', apiKey: AGENT_KEY } },
        redisUrl: `redis://forkpool:${REDIS_PASSWORD}@127.0.0.1:6379`,
        grantedTools: ['bash'],
        maxRetries: 0,
        background: { maxConcurrent: 1, cancelGraceMs: 200, closeTimeoutMs: 5_000 },
      },
    });
    const manager = watchManager(new BackgroundManager({ config, closeExecutor: true }));
    cleanups.add(() => manager.close({ timeoutMs: 2_000 }));
    const record = await ended(manager, manager.spawn({ task: 'Find the key.', label: 'hostile' }).id);
    expect(sim.scriptErrors).toEqual([]);

    expectNothingLeaked(sim, [record], [KEY, AGENT_KEY, REDIS_PASSWORD]);
    const results = toolResultsSent(sim);
    const result = (id: string) => results.get(id) ?? `(no result for ${id})`;
    // The excerpts really were cut inside the key (a 10-character piece each), and redacted.
    expect(result('grep_suffix')).toMatch(/^notes\/long\.txt:1: …\[REDACTED\]-+AFTERKEY/);
    expect(result('grep_prefix')).toMatch(/^notes\/long\.txt:2: BEFOREKEYz+\[REDACTED\]…$/m);
    expect(result('read_long')).toContain('x[REDACTED]-');
    expect(result('bash_forms')).toMatch(/END\n\[exit code: 0\]$/);
    expect(result('bash_forms').match(/\[REDACTED\]/g)?.length).toBeGreaterThanOrEqual(12);
  });
});
