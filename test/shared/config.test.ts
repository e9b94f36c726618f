/**
 * Configuration: schema defaults, the seeds' snake_case aliases, error messages that name the
 * field, what was expected, what was received and where it came from; file < env < flags.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { CONFIG_FILE_NAME, loadConfig } from '../../src/main/setup/config-load.js';
import { z } from 'zod';
import { configSchema, MAX_HEAP_MB, MAX_YOUNG_HEAP_MB, MAX_OUTPUT_CHARS, MAX_TIMEOUT_MINUTES, MAX_TIMER_MS, parseConfig } from '../../src/shared/config.js';
import { DEFAULTS } from '../../src/shared/defaults.js';
import { BUILTIN_TOOL_NAMES } from '../../src/shared/fixed-limits.js';
import { ConfigError, type ConfigIssue } from '../../src/shared/errors.js';
import { resolveWorkspaceRoot } from '../../src/shared/tools/sandbox.js';
import { configError, tempWorkspace, useCleanup } from '../helpers/index.js';

const cleanup = useCleanup();
const WS = '/tmp/forkpool-config-test';
// The workspace must exist for a config to load.
mkdirSync(WS, { recursive: true });

function issueFor(error: ConfigError, field: string): ConfigIssue {
  const issue = error.issues.find((i) => i.field === field);
  if (!issue) throw new Error(`no issue for ${field}; got ${JSON.stringify(error.issues)}`);
  return issue;
}

/** A temp dir holding forkpool.config.json with `content` (a string is written verbatim). */
function dirWithConfig(content: unknown): string {
  const dir = tempWorkspace({}, cleanup);
  writeFileSync(path.join(dir, CONFIG_FILE_NAME), typeof content === 'string' ? content : JSON.stringify(content));
  return dir;
}

describe('parseConfig defaults', () => {
  it('fills every default from DEFAULTS', () => {
    const config = parseConfig({ workspaceRoot: WS });
    expect(config).toMatchObject({
      model: DEFAULTS.model,
      // temperature: unset (0 is sent unless the model refuses it: wires/sampling.ts).
      maxIterations: DEFAULTS.maxIterations,
      requestTimeoutMs: DEFAULTS.requestTimeoutMs,
      streamIdleTimeoutMs: DEFAULTS.streamIdleTimeoutMs,
      maxRetries: DEFAULTS.maxRetries,
      stream: true,
      workspaceRoot: WS,
      tools: [...BUILTIN_TOOL_NAMES],
      grantedTools: [],
      permissionMode: 'config',
      loopWarnAfter: DEFAULTS.loopWarnAfter,
      loopStopAfter: DEFAULTS.loopStopAfter,
      sessionSummaryMaxChars: DEFAULTS.sessionSummaryMaxChars,
    });
    expect(config.toolLimits).toEqual(DEFAULTS.tools);
    expect(config.background).toEqual(DEFAULTS.background);
    expect(config.baseUrl).toBeUndefined();
    expect(config.apiKey).toBeUndefined();
  });

  it('returns plain data that survives structured clone', () => {
    const config = parseConfig({ workspaceRoot: WS, background: { maxConcurrent: 5 } });
    expect(structuredClone(config)).toEqual(config);
  });

  it('does not write into the caller object', () => {
    const raw = { workspaceRoot: WS, max_background_agents: 4 };
    const copy = structuredClone(raw);
    parseConfig(raw);
    expect(raw).toEqual(copy);
  });

  it('refuses a workspace that is not there, or not a folder, at load, naming the path', () => {
    const dir = tempWorkspace({ 'file.txt': 'x' }, cleanup);
    const missing = path.join(dir, 'nope');
    expect(configError(() => parseConfig({ workspaceRoot: missing })).issues).toEqual([
      { field: 'workspaceRoot', expected: 'an existing directory', received: `${JSON.stringify(missing)} (ENOENT)` },
    ]);
    const file = path.join(dir, 'file.txt');
    expect(
      issueFor(
        configError(() => loadConfig({ workspace: file }, {}, dir)),
        'workspaceRoot',
      ),
    ).toMatchObject({
      received: `${JSON.stringify(file)} (not a directory)`,
      source: 'flag --workspace',
    });
  });

  it('requires workspaceRoot', () => {
    expect(
      issueFor(
        configError(() => parseConfig({})),
        'workspaceRoot',
      ).received,
    ).toBe('nothing');
  });
});

describe('snake_case aliases of the seeds', () => {
  it('puts max_background_agents and background_agent_timeout_minutes under background', () => {
    const config = parseConfig({ workspaceRoot: WS, max_background_agents: 7, background_agent_timeout_minutes: 2.5 });
    expect(config.background.maxConcurrent).toBe(7);
    expect(config.background.timeoutMinutes).toBe(2.5);
    expect(config).not.toHaveProperty('max_background_agents');
  });

  it('merges an alias with other background fields', () => {
    const config = parseConfig({ workspaceRoot: WS, background: { isolation: 'shared' }, max_background_agents: 4 });
    expect(config.background).toMatchObject({ isolation: 'shared', maxConcurrent: 4 });
  });

  it('reports a bad alias value under its real field', () => {
    const error = configError(() => parseConfig({ workspaceRoot: WS, max_background_agents: 0 }));
    expect(issueFor(error, 'background.maxConcurrent').received).toBe('0');
  });

  it('accepts the aliases in a config file', () => {
    const dir = dirWithConfig({ max_background_agents: 6, background_agent_timeout_minutes: 1 });
    const config = loadConfig({}, {}, dir);
    expect(config.background).toMatchObject({ maxConcurrent: 6, timeoutMinutes: 1 });
  });
});

describe('validation errors', () => {
  it('names the field, what was expected and what was received', () => {
    const error = configError(() => parseConfig({ workspaceRoot: WS, background: { maxConcurrent: 0 } }));
    expect(error.code).toBe('CONFIG_INVALID');
    expect(error.issues).toEqual([{ field: 'background.maxConcurrent', expected: 'a value >= 1', received: '0' }]);
    expect(error.message).toBe('config field "background.maxConcurrent": expected a value >= 1, received 0');
  });

  it('names an environment variable as the source of a bad value', () => {
    const error = configError(() => loadConfig({}, { FORKPOOL_MAX_BACKGROUND_AGENTS: 'abc' }, tempWorkspace({}, cleanup)));
    const issue = issueFor(error, 'background.maxConcurrent');
    expect(issue).toEqual({
      field: 'background.maxConcurrent',
      expected: 'number',
      received: '"abc"',
      source: 'environment variable FORKPOOL_MAX_BACKGROUND_AGENTS',
    });
    expect(error.message).toContain('(from environment variable FORKPOOL_MAX_BACKGROUND_AGENTS)');
  });

  it('names a flag and a file as sources', () => {
    const dir = dirWithConfig({ background: { isolation: 'process' } });
    const fromFile = issueFor(
      configError(() => loadConfig({}, {}, dir)),
      'background.isolation',
    );
    expect(fromFile).toMatchObject({ expected: 'one of "thread", "shared"', received: '"process"', source: path.join(dir, CONFIG_FILE_NAME) });
    // A flag replaces the file's bad value, and the source follows.
    const fromFlag = issueFor(
      configError(() => loadConfig({ isolation: 'fork' }, {}, dir)),
      'background.isolation',
    );
    expect(fromFlag).toMatchObject({ received: '"fork"', source: 'flag --isolation' });
    const flag = issueFor(
      configError(() => loadConfig({ maxIterations: 0 }, {}, tempWorkspace({}, cleanup))),
      'maxIterations',
    );
    expect(flag.source).toBe('flag --max-iterations');
  });

  it('rejects unknown keys, at the top and nested, naming the key', () => {
    const error = configError(() => parseConfig({ workspaceRoot: WS, modle: 'x', background: { maxConcurent: 2 } }));
    expect(issueFor(error, 'modle')).toMatchObject({ expected: 'no such key (unknown option)', received: 'key "modle"' });
    expect(issueFor(error, 'background.maxConcurent').received).toBe('key "maxConcurent"');
  });

  it('reports wrong types with expected and received', () => {
    const error = configError(() =>
      parseConfig({ workspaceRoot: WS, stream: 'yes', temperature: '0.5', tools: ['read_file', 'tele port'], toolLimits: [], baseUrl: 'ftp://x' }),
    );
    expect(issueFor(error, 'stream')).toMatchObject({ expected: 'boolean', received: '"yes"' });
    expect(issueFor(error, 'temperature')).toMatchObject({ expected: 'number', received: '"0.5"' });
    // A well-formed name no catalog has is the manager's to refuse (test/main/tools/catalog.test.ts).
    expect(issueFor(error, 'tools.1').expected).toContain('a tool name');
    expect(issueFor(error, 'toolLimits')).toMatchObject({ expected: 'object', received: 'an array' });
    expect(issueFor(error, 'baseUrl').expected).toBe('a valid url');
    expect(error.issues).toHaveLength(5);
  });

  it('requires loopStopAfter > loopWarnAfter', () => {
    const error = configError(() => parseConfig({ workspaceRoot: WS, loopWarnAfter: 4, loopStopAfter: 4 }));
    expect(issueFor(error, 'loopStopAfter').expected).toContain('greater than loopWarnAfter (4)');
  });
});

describe('loadConfig layers: file < environment < flags', () => {
  it('lets env override the file and flags override both, keeping untouched nested fields', () => {
    const dir = dirWithConfig({ model: 'file-model', maxIterations: 7, background: { maxConcurrent: 2, isolation: 'shared' } });
    const env = { FORKPOOL_MODEL: 'env-model', FORKPOOL_MAX_BACKGROUND_AGENTS: '5' };
    const fileOnly = loadConfig({}, {}, dir);
    expect([fileOnly.model, fileOnly.background.maxConcurrent]).toEqual(['file-model', 2]);
    const withEnv = loadConfig({}, env, dir);
    expect([withEnv.model, withEnv.background.maxConcurrent, withEnv.background.isolation, withEnv.maxIterations]).toEqual(['env-model', 5, 'shared', 7]);
    const withFlags = loadConfig({ model: 'flag-model', concurrency: 9 }, env, dir);
    expect([withFlags.model, withFlags.background.maxConcurrent, withFlags.background.isolation]).toEqual(['flag-model', 9, 'shared']);
  });

  it("a command's default isolation (fanout: shared) is the weakest layer: any file, variable or flag that sets it wins", () => {
    const empty = tempWorkspace({}, cleanup);
    expect(loadConfig({}, {}, empty).background.isolation).toBe('thread');
    expect(loadConfig({ defaultIsolation: 'shared' }, {}, empty).background.isolation).toBe('shared');
    // A file's background group without isolation keeps the command's default.
    expect(loadConfig({ defaultIsolation: 'shared' }, {}, dirWithConfig({ background: { maxConcurrent: 2 } })).background.isolation).toBe('shared');
    expect(loadConfig({ defaultIsolation: 'shared' }, {}, dirWithConfig({ background: { isolation: 'thread' } })).background.isolation).toBe('thread');
    expect(loadConfig({ defaultIsolation: 'shared' }, { FORKPOOL_ISOLATION: 'thread' }, empty).background.isolation).toBe('thread');
    expect(loadConfig({ defaultIsolation: 'shared', isolation: 'thread' }, {}, empty).background.isolation).toBe('thread');
  });

  it('reads the key and base URL from the environment', () => {
    const config = loadConfig({}, { OPENAI_API_KEY: 'sk-test-key', OPENAI_BASE_URL: 'http://127.0.0.1:9/v1' }, tempWorkspace({}, cleanup));
    expect(config.apiKey).toBe('sk-test-key');
    expect(config.baseUrl).toBe('http://127.0.0.1:9/v1');
  });

  it('defaults the workspace to cwd and resolves a relative file workspace against the file', () => {
    const dir = tempWorkspace({}, cleanup);
    expect(loadConfig({}, {}, dir).workspaceRoot).toBe(dir);
    const withFile = dirWithConfig({ workspaceRoot: 'sub' });
    for (const sub of ['sub', 'other']) mkdirSync(path.join(withFile, sub));
    expect(loadConfig({}, {}, withFile).workspaceRoot).toBe(path.join(withFile, 'sub'));
    expect(loadConfig({ workspace: 'other' }, {}, withFile).workspaceRoot).toBe(path.join(withFile, 'other'));
  });

  it('reads an explicit --config path relative to cwd', () => {
    const dir = tempWorkspace({ 'conf/my.json': JSON.stringify({ model: 'from-explicit' }) }, cleanup);
    expect(loadConfig({ configPath: 'conf/my.json' }, {}, dir).model).toBe('from-explicit');
  });

  it('splits FORKPOOL_GRANT into a list', () => {
    expect(loadConfig({}, { FORKPOOL_GRANT: 'bash, write_file' }, tempWorkspace({}, cleanup)).grantedTools).toEqual(['bash', 'write_file']);
  });
});

describe('config file errors', () => {
  it('rejects invalid JSON with a ConfigError naming the file', () => {
    const dir = dirWithConfig('{ "model": "x", }');
    const issue = issueFor(
      configError(() => loadConfig({}, {}, dir)),
      '(file)',
    );
    expect(issue.expected).toBe('valid JSON');
    expect(issue.source).toBe(path.join(dir, CONFIG_FILE_NAME));
  });

  it('rejects a file that is not a JSON object', () => {
    const issue = issueFor(
      configError(() => loadConfig({}, {}, dirWithConfig('[1, 2]'))),
      '(root)',
    );
    expect(issue).toMatchObject({ expected: 'a JSON object', received: 'an array' });
  });

  it('rejects a missing explicit --config file', () => {
    const issue = issueFor(
      configError(() => loadConfig({ configPath: 'nope.json' }, {}, tempWorkspace({}, cleanup))),
      '(file)',
    );
    expect(issue.received).toContain('ENOENT');
  });
});

describe('the API key never appears in an error message', () => {
  const KEY = 'sk-secret-4f9a8b7c6d5e4f3a2b1c';

  it('with the key in the environment and another field wrong', () => {
    const error = configError(() => loadConfig({}, { OPENAI_API_KEY: KEY, FORKPOOL_MAX_BACKGROUND_AGENTS: '0' }, tempWorkspace({}, cleanup)));
    expect(error.message).not.toContain(KEY);
    expect(JSON.stringify(error.issues)).not.toContain(KEY);
  });

  it('with the key in a file next to a wrong field', () => {
    const error = configError(() => loadConfig({}, {}, dirWithConfig({ apiKey: KEY, temperature: 9 })));
    expect(issueFor(error, 'temperature').received).toBe('9');
    expect(error.message).not.toContain(KEY);
  });

  it('with a JSON syntax error right at the key', () => {
    // A key pasted without quotes: the parser's own message quotes the text around the error.
    const error = configError(() => loadConfig({}, {}, dirWithConfig(`{"model": "m", "apiKey": ${KEY}}`)));
    expect(issueFor(error, '(file)').expected).toBe('valid JSON');
    expect(error.message).not.toContain('sk-secret');
    expect(JSON.stringify(error.issues)).not.toContain('sk-secret');
  });
});

describe('bounds: every timeout fits a Node timer, heapMb has a ceiling', () => {
  // Node's setTimeout holds a signed 32-bit ms count; a larger delay fires after 1 ms.
  const TIMER_FIELDS: Array<[group: 'toolLimits' | 'background' | null, key: string]> = [
    [null, 'requestTimeoutMs'],
    [null, 'streamIdleTimeoutMs'],
    ['toolLimits', 'bashTimeoutMs'],
    ['toolLimits', 'toolTimeoutMs'],
    ['background', 'cancelGraceMs'],
    ['background', 'closeTimeoutMs'],
  ];
  const withField = (group: string | null, key: string, value: number) => ({
    workspaceRoot: WS,
    ...(group ? { [group]: { [key]: value } } : { [key]: value }),
  });

  it.each(TIMER_FIELDS)('%s.%s accepts 2^31-1 ms and refuses one more, naming field, bound and value', (group, key) => {
    const field = group ? `${group}.${key}` : key;
    expect(() => parseConfig(withField(group, key, MAX_TIMER_MS))).not.toThrow();
    const issue = issueFor(
      configError(() => parseConfig(withField(group, key, MAX_TIMER_MS + 1))),
      field,
    );
    expect(issue).toEqual({ field, expected: `a value <= ${MAX_TIMER_MS}`, received: String(MAX_TIMER_MS + 1) });
  });

  it('background.timeoutMinutes: at most 35791 minutes (the most whole minutes under 2^31-1 ms)', () => {
    expect(MAX_TIMEOUT_MINUTES).toBe(35_791);
    expect(MAX_TIMEOUT_MINUTES * 60_000).toBeLessThanOrEqual(MAX_TIMER_MS);
    expect((MAX_TIMEOUT_MINUTES + 1) * 60_000).toBeGreaterThan(MAX_TIMER_MS);
    expect(parseConfig({ workspaceRoot: WS, background: { timeoutMinutes: MAX_TIMEOUT_MINUTES } }).background.timeoutMinutes).toBe(MAX_TIMEOUT_MINUTES);
    const error = configError(() => loadConfig({ timeoutMinutes: 100_000 }, {}, tempWorkspace({}, cleanup)));
    expect(issueFor(error, 'background.timeoutMinutes')).toEqual({
      field: 'background.timeoutMinutes',
      expected: 'a value <= 35791',
      received: '100000',
      source: 'flag --timeout',
    });
    // The seeds' alias is bounded the same way.
    expect(
      issueFor(
        configError(() => parseConfig({ workspaceRoot: WS, background_agent_timeout_minutes: 1e9 })),
        'background.timeoutMinutes',
      ).received,
    ).toBe('1000000000');
  });

  it('background.heapMb: 0 (by isolation) or 16 to 65536 MiB', () => {
    expect(parseConfig({ workspaceRoot: WS }).background.heapMb).toBe(0);
    expect(parseConfig({ workspaceRoot: WS, background: { heapMb: MAX_HEAP_MB } }).background.heapMb).toBe(65_536);
    expect(
      issueFor(
        configError(() => parseConfig({ workspaceRoot: WS, background: { heapMb: 8 } })),
        'background.heapMb',
      ),
    ).toMatchObject({ expected: '0 (by isolation) or a value >= 16', received: '8' });
    expect(
      issueFor(
        configError(() => parseConfig({ workspaceRoot: WS, background: { heapMb: 65_537 } })),
        'background.heapMb',
      ),
    ).toMatchObject({ expected: 'a value <= 65536', received: '65537' });
  });

  it('background.youngHeapMb: 0 (by isolation) to 1024 MiB, whole numbers', () => {
    expect(parseConfig({ workspaceRoot: WS }).background.youngHeapMb).toBe(0);
    expect(parseConfig({ workspaceRoot: WS, background: { youngHeapMb: MAX_YOUNG_HEAP_MB } }).background.youngHeapMb).toBe(1_024);
    const issue = (youngHeapMb: unknown) =>
      issueFor(
        configError(() => parseConfig({ workspaceRoot: WS, background: { youngHeapMb } as never })),
        'background.youngHeapMb',
      );
    expect(issue(1_025)).toMatchObject({ expected: 'a value <= 1024', received: '1025' });
    expect(issue(-1)).toMatchObject({ expected: 'a value >= 0', received: '-1' });
    expect(issue('4')).toMatchObject({ field: 'background.youngHeapMb', received: '"4"' });
  });
});

describe('background.timeoutMs, the millisecond alternative to timeoutMinutes', () => {
  it('becomes timeoutMinutes; the parsed config parses again unchanged', () => {
    const config = parseConfig({ workspaceRoot: WS, background: { timeoutMs: 90_000 } });
    expect(config.background.timeoutMinutes).toBe(1.5);
    expect(config.background).not.toHaveProperty('timeoutMs');
    expect(parseConfig(config)).toEqual(config);
    const longest = parseConfig({ workspaceRoot: WS, background: { timeoutMs: MAX_TIMEOUT_MINUTES * 60_000 } });
    expect(parseConfig(longest).background.timeoutMinutes).toBe(MAX_TIMEOUT_MINUTES);
    expect(
      issueFor(
        configError(() => parseConfig({ workspaceRoot: WS, background: { timeoutMs: MAX_TIMER_MS } })),
        'background.timeoutMs',
      ).expected,
    ).toBe('a value <= 2147460000');
  });

  it('both set in one place is an error naming both', () => {
    const dir = dirWithConfig({ background: { timeoutMs: 60_000, timeoutMinutes: 5 } });
    const issue = issueFor(
      configError(() => loadConfig({}, {}, dir)),
      'background.timeoutMs',
    );
    expect(issue.expected).toContain('not both');
    expect(issue.received).toBe('timeoutMs 60000 and timeoutMinutes 5');
    expect(issue.source).toBe(path.join(dir, CONFIG_FILE_NAME));
    expect(() => parseConfig({ workspaceRoot: WS, background_agent_timeout_minutes: 5, background: { timeoutMs: 60_000 } })).toThrow(ConfigError);
  });

  it("a stronger layer setting the minutes replaces the file's timeoutMs", () => {
    const dir = dirWithConfig({ background: { timeoutMs: 60_000 } });
    expect(loadConfig({}, {}, dir).background.timeoutMinutes).toBe(1);
    expect(loadConfig({ timeoutMinutes: 7 }, {}, dir).background.timeoutMinutes).toBe(7);
    expect(loadConfig({}, { FORKPOOL_BACKGROUND_TIMEOUT_MINUTES: '3' }, dir).background.timeoutMinutes).toBe(3);
  });
});

describe('an alias and its field both set', () => {
  it('warns naming both and the winner (the alias); no warning when only one is set', () => {
    const warnings: string[] = [];
    const onWarning = (message: string) => warnings.push(message);
    const config = parseConfig({ workspaceRoot: WS, max_background_agents: 2, background: { maxConcurrent: 5 } }, {}, { onWarning });
    expect(config.background.maxConcurrent).toBe(2);
    expect(warnings).toEqual([
      'config sets both "max_background_agents" (2) and "background.maxConcurrent" (5); using "max_background_agents" (2). Remove one of them.',
    ]);
    parseConfig({ workspaceRoot: WS, max_background_agents: 2 }, {}, { onWarning });
    parseConfig({ workspaceRoot: WS, background: { maxConcurrent: 5 } }, {}, { onWarning });
    expect(warnings).toHaveLength(1);
  });

  it("in a file: warned through loadConfig, and a flag or env still wins over the file's alias", () => {
    const warnings: string[] = [];
    const dir = dirWithConfig({ max_background_agents: 2, background: { maxConcurrent: 5 }, background_agent_timeout_minutes: 3 });
    expect(loadConfig({ onWarning: (m) => warnings.push(m) }, {}, dir).background.maxConcurrent).toBe(2);
    expect(warnings).toHaveLength(1);
    expect(loadConfig({ concurrency: 9, onWarning: () => {} }, {}, dir).background.maxConcurrent).toBe(9);
    expect(loadConfig({ onWarning: () => {} }, { FORKPOOL_MAX_BACKGROUND_AGENTS: '4' }, dir).background.maxConcurrent).toBe(4);
  });
});

describe('system folders as the workspace', () => {
  const forcible = ['/etc', '/usr', '/bin', '/sbin', '/lib', '/boot', '/var', '/run', '/home', '/opt'];
  const never = ['/proc', '/sys', '/dev', '/proc/self', '/proc/1/root', '/sys/kernel', '/dev/shm'];

  it.each(forcible)('%s is refused naming workspaceRoot (forced only by allowBroadWorkspace), by parseConfig and resolveWorkspaceRoot', async (root) => {
    const issue = issueFor(
      configError(() => parseConfig({ workspaceRoot: root })),
      'workspaceRoot',
    );
    expect(issue.expected).toMatch(/system folder.*allowBroadWorkspace/);
    expect(issue.received).toBe(`${JSON.stringify(root)} (a system folder)`);
    expect(parseConfig({ workspaceRoot: root, allowBroadWorkspace: true }).workspaceRoot).toBe(root);
    await expect(resolveWorkspaceRoot(root)).rejects.toMatchObject({ code: 'CONFIG_INVALID', issues: [{ field: 'workspaceRoot' }] });
  });

  it.each(never)('%s (a kernel pseudo file system) is refused even with allowBroadWorkspace', async (root) => {
    const issue = issueFor(
      configError(() => parseConfig({ workspaceRoot: root, allowBroadWorkspace: true })),
      'workspaceRoot',
    );
    expect(issue).toMatchObject({
      expected: expect.stringMatching(/not a path in \/proc, \/sys or \/dev/),
      received: expect.stringContaining('pseudo file system'),
    });
    await expect(resolveWorkspaceRoot(root, { allowBroad: true })).rejects.toMatchObject({ code: 'CONFIG_INVALID' });
  });

  it('a project inside a system folder, or named like one, is still a workspace', async () => {
    const dir = tempWorkspace({ 'proc/.keep': '' }, cleanup);
    expect(parseConfig({ workspaceRoot: path.join(dir, 'proc') }).workspaceRoot).toBe(path.join(dir, 'proc'));
    // Not there on this machine: refused only for that, not as a system folder.
    for (const root of ['/var/www/site', '/usr/local/src/app', '/etcetera', '/procs']) {
      expect(configError(() => parseConfig({ workspaceRoot: root })).issues).toEqual([
        { field: 'workspaceRoot', expected: 'an existing directory', received: `${JSON.stringify(root)} (ENOENT)` },
      ]);
    }
    expect(await resolveWorkspaceRoot(dir)).toBe(dir);
  });
});

describe('every numeric limit has an upper bound', () => {
  /** Every number field of the schema, as a dotted path, with its maximum (Infinity when none). */
  function numberMaxima(schema: z.ZodType, at: string, out: Array<[string, number]>): Array<[string, number]> {
    const def = (schema as unknown as { _zod: { def: Record<string, unknown> & { type: string } } })._zod.def;
    if (def.type === 'number') out.push([at, (schema as z.ZodNumber).maxValue ?? Infinity]);
    else if (def.type === 'object')
      for (const [key, field] of Object.entries(def.shape as Record<string, z.ZodType>)) numberMaxima(field, at ? `${at}.${key}` : key, out);
    else if (def.type === 'record') numberMaxima(def.valueType as z.ZodType, `${at}.<name>`, out);
    else if (def.type === 'array') numberMaxima(def.element as z.ZodType, `${at}.<n>`, out);
    else if ('innerType' in def) numberMaxima(def.innerType as z.ZodType, at, out);
    else if (def.type === 'pipe') numberMaxima(def.in as z.ZodType, at, out);
    return out;
  }

  it('each number in the config schema has a finite maximum', () => {
    const maxima = numberMaxima(configSchema, '', []);
    expect(maxima.length).toBeGreaterThan(60);
    // `.int()` alone sets zod's maximum to Number.MAX_SAFE_INTEGER: that is no bound either.
    expect(maxima.filter(([, max]) => !(max < Number.MAX_SAFE_INTEGER)).map(([field]) => field)).toEqual([]);
  });

  it('toolLimits.outputMaxChars: at most 1,000,000, refused above naming field, bound and value', () => {
    expect(parseConfig({ workspaceRoot: WS, toolLimits: { outputMaxChars: MAX_OUTPUT_CHARS } }).toolLimits.outputMaxChars).toBe(1_000_000);
    const issue = issueFor(
      configError(() => parseConfig({ workspaceRoot: WS, toolLimits: { outputMaxChars: 1e12 } })),
      'toolLimits.outputMaxChars',
    );
    expect(issue).toEqual({ field: 'toolLimits.outputMaxChars', expected: 'a value <= 1000000', received: '1000000000000' });
  });
});

describe('a base URL with credentials', () => {
  const SECRET = 'hunter2-s3cret';
  it.each([
    ['baseUrl', { baseUrl: `http://alice:${SECRET}@127.0.0.1:9/v1` }],
    ['agents.helper.baseUrl', { agents: { helper: { description: 'helps', baseUrl: `https://alice:${SECRET}@example.com/v1` } } }],
    ['baseUrl', { baseUrl: `http://${SECRET}@127.0.0.1:9/v1` }],
    ['bullmq.allowedBaseUrls.0', { bullmq: { allowedBaseUrls: [`http://alice:${SECRET}@127.0.0.1:9/v1`] } }],
  ])('%s with user:pass@ is refused with a clear error that does not show the credentials', (field, input) => {
    const error = configError(() => parseConfig({ workspaceRoot: WS, ...input }));
    const issue = issueFor(error, field);
    expect(issue.expected).toBe('a URL without credentials (user:pass@ in a URL is not supported; put the key in apiKey)');
    expect(issue.received).toMatch(/^"https?:\/\/\*\*\*@/);
    expect(error.message).not.toContain(SECRET);
    expect(error.message).not.toContain('alice');
  });

  it('from --base-url or OPENAI_BASE_URL too, naming the source', () => {
    const url = `http://bob:${SECRET}@127.0.0.1:9/v1`;
    const fromFlag = issueFor(
      configError(() => loadConfig({ baseUrl: url }, {}, tempWorkspace({}, cleanup))),
      'baseUrl',
    );
    expect(fromFlag).toMatchObject({ source: 'flag --base-url', received: '"http://***@127.0.0.1:9/v1"' });
    const fromEnv = configError(() => loadConfig({}, { OPENAI_BASE_URL: url }, tempWorkspace({}, cleanup)));
    expect(issueFor(fromEnv, 'baseUrl').source).toBe('environment variable OPENAI_BASE_URL');
    expect(fromEnv.message).not.toContain(SECRET);
  });

  it('a URL without credentials is still accepted', () => {
    expect(parseConfig({ workspaceRoot: WS, baseUrl: 'http://127.0.0.1:9/v1?user=x@y' }).baseUrl).toBe('http://127.0.0.1:9/v1?user=x@y');
  });
});
