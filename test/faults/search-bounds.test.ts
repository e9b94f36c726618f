/**
 * Bounded work in the search tools (issue 18, "Bounded work, honest output"): a glob bomb in
 * `find_files` or grep's `glob`, and a heavy pattern against long lines in `grep`, end promptly
 * (a result or TOOL_TIMEOUT), never block the job's thread for minutes. Through the real pool:
 * a scripted model calls the tools in a worker thread. The glob syntax itself is checked too.
 */
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { compileGlob } from '../../src/shared/tools/glob.js';
import { MAX_PATTERN_CHARS, compileLinear, literalAlternatives } from '../../src/shared/tools/regex.js';
import { findFilesTool, grepTool } from '../../src/shared/tools/index.js';
import type { LoopEvent } from '../../src/shared/loop-events.js';
import { useCleanup, ended, makeConfig, makeManager, makeWorkspace, startSim, toolMessagesOf, callTool, toolContext, toolError } from '../helpers/index.js';

const cleanups = useCleanup();

/** picomatch's backtracking RegExp took 52 s on 80 a's against this; 200 is far beyond. */
const GLOB_BOMB = '*a*a*a*a*a*a*a*b';
/** re2js runs this in linear time, but slowly: one 64 KiB line cost ~10 s in one call. */
const HEAVY_PATTERN = '\\w{1000}Z|(.{0,1000})Z|[^Z]{0,1000}Z';
/**
 * Far above what the bounded matchers need, so the test sees what they return, not the time limit
 * (which ended the old, unbounded ones too): a glob bomb or an unbounded line then ends in
 * TOOL_TIMEOUT (or the test's timeout), and the answers below are not what it returns.
 */
const SEARCH_LIMIT_MS = 50_000;

describe('search tools in a worker thread end within their limits', () => {
  it('a glob bomb in find_files and grep, and a heavy pattern on long lines, end with their answers, not at the time limit', async () => {
    const root = await makeWorkspace(cleanups);
    await mkdir(path.join(root, 'bomb'));
    await writeFile(path.join(root, 'bomb', 'a'.repeat(200)), 'needle\n');
    await writeFile(path.join(root, 'bomb', `${'a'.repeat(120)}b`), 'needle\n');
    // 12 lines of 64 KiB, each ending in the Z the heavy pattern looks for.
    const line = Array.from({ length: 64 * 1024 - 1 }, (_, i) => 'abcdefghij klmnop\tqrs'[(i * 7919) % 21]).join('');
    await writeFile(path.join(root, 'long.txt'), `${line}Z\n`.repeat(12));
    const calls = [
      { name: 'find_files', arguments: { pattern: GLOB_BOMB, path: 'bomb' } },
      { name: 'grep', arguments: { pattern: 'needle', path: 'bomb', glob: GLOB_BOMB } },
      { name: 'grep', arguments: { pattern: HEAVY_PATTERN, path: 'long.txt' } },
    ];
    const sim = await startSim(cleanups, { script: [...calls.map((call) => ({ toolCalls: [call] })), { content: 'done' }] });
    const config = makeConfig(sim, root, { maxConcurrent: 1 }, { toolLimits: { searchTimeoutMs: SEARCH_LIMIT_MS } });
    const manager = makeManager(config, cleanups);
    const events: LoopEvent[] = [];
    manager.on('progress', ({ event }) => events.push(event));
    const { id } = manager.spawn({ task: 'Search the workspace.', label: 'bounded search' });
    const record = await ended(manager, id);

    expect(record.status).toBe('ok');
    const results = events.filter((e) => e.type === 'tool_result');
    expect(results.map((r) => r.name)).toEqual(['find_files', 'grep', 'grep']);
    const [found, grepped, heavy] = toolMessagesOf(sim.requests.at(-1)?.body);
    // The bomb's own name does not match; the one ending in b does (and only it).
    expect(found).toBe(`bomb/${'a'.repeat(120)}b\n[1 file]`);
    expect(grepped).toBe(`bomb/${'a'.repeat(120)}b:1: needle`);
    // It searched every line's first part, and says so.
    expect(heavy).toMatch(/^No matches for .* searched 1 file\.\n\[12 lines longer than \d+ characters: only the first \d+ of each were searched\]$/);
  }, 120_000);
});

describe('long lines and big patterns in grep', () => {
  it('a match past the part of a line that is searched is not found, and the output says how much was searched', async () => {
    const root = await makeWorkspace(cleanups);
    await writeFile(path.join(root, 'wide.txt'), `${'x'.repeat(5000)}needle\nshort needle\n`);
    const out = await callTool(grepTool, { pattern: '[a-z]{0,1000}needle', path: 'wide.txt' }, toolContext(root));
    expect(out).toMatch(/^wide\.txt:2: short needle\n\n\[1 line longer than (\d+) characters: only the first \1 of each were searched\]$/);
    // A simple pattern searches the whole line (up to 64 KiB) and finds it.
    expect(await callTool(grepTool, { pattern: 'needle', path: 'wide.txt' }, toolContext(root))).toMatch(/^wide\.txt:1: …x+needle\nwide\.txt:2: short needle$/);
  });

  it.each([
    ['a pattern over the length limit', 'a'.repeat(MAX_PATTERN_CHARS + 1), /pattern: expected at most 1000 characters; received 1001/],
    [
      'a pattern whose program is too large',
      '\\w{1000}'.repeat(9),
      /pattern: expected a regular expression of at most 8000 compiled instructions; received .*9\d{3} instructions/,
    ],
  ])('%s is refused with TOOL_ARGUMENTS_INVALID naming the field and the limit', async (_what, pattern, message) => {
    const error = await toolError(callTool(grepTool, { pattern }, toolContext(await makeWorkspace(cleanups))));
    expect(error.code).toBe('TOOL_ARGUMENTS_INVALID');
    expect(error.message).toMatch(message);
  });
});

describe('globs', () => {
  it.each([
    ['**/*.ts', ['a.ts', 'src/a.ts', 'src/deep/c.ts'], ['a.js', 'ts']],
    ['src/**', ['src/a', 'src/deep/c.ts'], ['lib/a']],
    ['a/**/b', ['a/b', 'a/x/b', 'a/x/y/b'], ['a/xb', 'b']],
    ['*.{json,yaml}', ['x.json', '.y.yaml'], ['d/x.json', 'x.yml']],
    ['x/{a,{b,c}}/y', ['x/a/y', 'x/c/y'], ['x/d/y']],
    ['[!a]*', ['b', '.env'], ['abc']],
    ['[[:digit:]]?', ['1x'], ['xx', '1/']],
    ['*.+(js|ts)', ['m.js', 'm.tsts'], ['m.', 'm.jsx']],
    ['@(a|b).md', ['a.md', 'b.md'], ['c.md', 'ab.md']],
    ['a\\*b', ['a*b'], ['axb']],
    ['!*.ts', ['a.js'], ['a.ts']],
    [GLOB_BOMB, [`${'a'.repeat(7)}b`], ['a'.repeat(2000), 'ab']],
  ])('%s matches what it should', async (glob, yes, no) => {
    const matches = await compileGlob(glob, 'find_files', 'pattern');
    for (const p of yes) expect(matches(p), `${glob} should match ${p}`).toBe(true);
    for (const p of no) expect(matches(p), `${glob} should not match ${p}`).toBe(false);
  });

  it.each([
    ['a negated extglob !(a).ts', '!(a).ts', /pattern: expected a glob without a negated extglob !\(…\)/],
    ['a glob of 1,001 characters', '*'.repeat(1001), /pattern: expected at most 1000 characters; received 1001/],
  ])('%s is refused with TOOL_ARGUMENTS_INVALID by find_files and grep, and no descriptor is left open', async (_what, pattern, message) => {
    const root = await makeWorkspace(cleanups);
    const { readdirSync } = await import('node:fs');
    const before = readdirSync('/proc/self/fd').length;
    for (const [tool, args] of [
      [findFilesTool, { pattern }],
      [grepTool, { pattern: 'x', glob: pattern }],
    ] as const) {
      const error = await toolError(callTool(tool, args, toolContext(root)));
      expect(error.code).toBe('TOOL_ARGUMENTS_INVALID');
      expect(error.message).toMatch(tool === grepTool ? new RegExp(message.source.replace('pattern', 'glob')) : message);
    }
    expect(readdirSync('/proc/self/fd').length).toBeLessThanOrEqual(before);
  });
});

describe('the fast paths match as RE2 does', () => {
  const paths = [
    'a.ts',
    'src/a.ts',
    'src/deep/zorblax3-wiring.ts',
    '.env',
    'x',
    '',
    'zorblax3',
    'a/zorblax3/b.ts',
    'K.md',
    '😀x.ts',
    'ab/b',
    'aaab',
    'a.ts.bak',
    'mod-00017.ts',
  ];
  it.each(['**/*.ts', '*.ts', '**/*zorblax3*', '*zorblax3*', '?.ts', '??x.ts', 'a*a*b', '*', '**/*', 'a**', '**/a**', 'x', '*.ts*', '*?'])(
    'the simple glob %s matches what the same glob through RE2 matches',
    async (glob) => {
      // One brace alternative: the same glob, through the translator and re2js.
      const translated = glob.startsWith('**/') ? `**/{${glob.slice(3)}}` : `{${glob}}`;
      for (const basename of [false, true]) {
        const [fast, re2] = await Promise.all([
          compileGlob(glob, 'find_files', 'pattern', { basename }),
          compileGlob(translated, 'find_files', 'pattern', { basename }),
        ]);
        for (const p of paths) expect(fast(p), `${glob} on ${p} (basename ${basename})`).toBe(re2(p));
      }
    },
  );

  it.each([
    ['zorblax3|quasarmodule', true],
    ['needle', false],
    ['NEEDLE', true],
    ['k', true],
    ['s', true],
    ['a\\.b|\\\\1', false],
    ['x-y|a/b', true],
  ])('the literal pattern %s (ignore_case %s) finds what RE2 finds', async (pattern, ignoreCase) => {
    const { RE2JS } = await import('re2js');
    const re2 = RE2JS.compile(RE2JS.translateRegExp(pattern), ignoreCase ? RE2JS.CASE_INSENSITIVE : 0);
    expect(literalAlternatives(pattern)).toBeDefined();
    const matcher = await compileLinear(pattern, ignoreCase, 'grep');
    const lines = [
      '',
      'the Quasarmodule here',
      'ZORBLAX3 and quasarmodule',
      'needle',
      'a NEEDLE',
      '\u212A kelvin',
      'long \u017F s',
      'a.b and \\1',
      'axb',
      'x-y a/b',
      'K s',
    ];
    for (const line of lines) {
      const m = re2.matcher(line);
      expect(matcher.firstMatch(line), `${pattern} on ${JSON.stringify(line)}`).toBe(m.find() ? m.start() : -1);
    }
  });

  it.each(['(a+)+$', 'a.b', 'a*', '\\d', '^x', 'a|', '\\u0041', 'é'])('%s is not taken for literal text', (pattern) => {
    expect(literalAlternatives(pattern)).toBeUndefined();
  });
});
