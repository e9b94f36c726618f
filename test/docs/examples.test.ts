/**
 * Every code example in README.md and docs/*.md runs, as a reader would meet it (issue 36 §4):
 * parsed from the Markdown at test time, so a changed flag, option or export fails here the day
 * it goes stale. TypeScript blocks run on the built package, shell blocks with `forkpool` on
 * PATH, both on one shared simulator; JSON config blocks go through the config parser; `text`
 * blocks are output and are not run. The annotations (`<!-- example: skip (why) -->`, `setup`,
 * `expect`, `data`) and the placeholders are in docs/CONTRIBUTING.md.
 */
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { stripComments } from 'jsonc-parser';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/shared/config.js';
import { freeLoopbackPort } from '../../src/shared/loopback.js';
import { startSimServer, type SimServer } from '../../src/sim/index.js';
import { createCleanup } from '../helpers/cleanup.js';
import { REQUIRE_SYSTEM } from '../helpers/system.js';
import { startRedis, skipWithoutRedis } from '../helpers/redis.js';
import { prepareWorld, runExample, type ExampleWorld } from './example-runner.js';
import { codeBlocks, type CodeBlock } from './markdown-examples.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const FILES = [
  'README.md',
  ...readdirSync(path.join(ROOT, 'docs'))
    .filter((name) => name.endsWith('.md'))
    .sort()
    .map((name) => `docs/${name}`),
];
const BLOCKS = FILES.flatMap((file) => codeBlocks(ROOT, file));
const RUNS = new Set(['ts', 'typescript', 'js', 'javascript', 'sh', 'bash']);
const JSON_LANGS = new Set(['json', 'jsonc']);
/** A safety net against a hang, not a measurement: blocks run side by side (the file takes about 30 s on two idle cores). */
const EXAMPLE_TIMEOUT_MS = 60_000;

/** `docs/cli.md:102 sh: forkpool fanout tasks.jsonl …`: where it is (the line moves as the file changes) and what it says. */
function name(block: CodeBlock): string {
  const first = block.code.split('\n').find((line) => line.trim() !== '' && !/^\s*(\/\/|#)/.test(line)) ?? '';
  return `${block.file}:${block.line} ${block.lang || '(no language)'}: ${first.trim().slice(0, 60)}`;
}

describe('every code block of README.md and docs/*.md', () => {
  const cleanup = createCleanup();
  let sim: SimServer;
  const world = { root: ROOT, dir: '', simUrl: '', freePort: freeLoopbackPort } as ExampleWorld;

  beforeAll(async () => {
    world.dir = mkdtempSync(path.join(os.tmpdir(), 'forkpool-doc-examples-'));
    cleanup.add(() => rmSync(world.dir, { recursive: true, force: true }));
    prepareWorld(ROOT, world.dir);
    sim = await startSimServer({ latencyMs: 5, recordBodies: false });
    cleanup.add(() => sim.close());
    world.simUrl = sim.url;
    const needsRedis = BLOCKS.some((block) => block.code.includes('redis://10.0.0.5:6379') && !block.notes.skip);
    if (needsRedis && !skipWithoutRedis()) world.redisUrl = (await startRedis(cleanup)).url;
  });
  afterAll(() => cleanup.run());

  it('finds the blocks, each with a language and only known annotations', () => {
    expect(BLOCKS.length).toBeGreaterThan(40);
    const problems = BLOCKS.flatMap((block) => [
      ...(block.lang === '' ? [`${name(block)}: give it a language (\`text\` for output, not run)`] : []),
      ...(block.lang !== '' && block.lang !== 'text' && !RUNS.has(block.lang) && !JSON_LANGS.has(block.lang) && !block.notes.skip
        ? [`${name(block)}: no runner for "${block.lang}": annotate <!-- example: skip (why) -->`]
        : []),
      ...block.notes.unknown.map((text) => `${name(block)}: unknown annotation "example: ${text}"`),
    ]);
    expect(problems).toEqual([]);
  });

  it.each(BLOCKS.filter((block) => JSON_LANGS.has(block.lang) && !block.notes.skip).map((block) => [name(block), block] as const))(
    '%s parses (a config block: through the config parser)',
    (_name, block) => {
      // As the config loader reads a file (config-load.ts): comments allowed, then plain JSON (no trailing commas).
      const value: unknown = JSON.parse(stripComments(block.code, ' '));
      // loadConfig sets workspaceRoot before parsing; a block that names none gets the repository.
      const file = { workspaceRoot: ROOT, ...(value as object) };
      if (block.notes.data === undefined) expect(() => parseConfig(file, {}, { checkWorkspace: false, onWarning: () => {} })).not.toThrow();
    },
  );

  const runnable = BLOCKS.filter((block) => RUNS.has(block.lang) && !block.notes.skip);
  it.concurrent.each(runnable.map((block) => [name(block), block] as const))(
    '%s runs',
    async (_name, block) => {
      if (block.code.includes('redis://10.0.0.5:6379') && world.redisUrl === undefined) {
        if (REQUIRE_SYSTEM) throw new Error('redis-server is required (FORKPOOL_TEST_REQUIRE_SYSTEM=1)');
        return;
      }
      const run = await runExample(block, world, EXAMPLE_TIMEOUT_MS);
      const said = `${name(block)}:\n${run.output.slice(-4000)}`;
      expect(run.timedOut, `timed out after ${EXAMPLE_TIMEOUT_MS} ms: ${said}`).toBe(false);
      expect(run.code, said).toBe(0);
      for (const text of block.notes.expect) expect(run.output, said).toContain(text);
      // A command that failed inside `a && b` does not stop bash (-e): its message does fail the block.
      expect(run.output, said).not.toMatch(/example\.sh: line \d+:|^docs test: /m);
      // What a reader would see printed as a bug: a field that is not there.
      expect(run.output, said).not.toMatch(/\bundefined\b|\bNaN\b|\[object Object\]/);
    },
    EXAMPLE_TIMEOUT_MS + 5_000,
  );

  it('skips are rare and each says why', () => {
    const skipped = BLOCKS.filter((block) => block.notes.skip !== undefined);
    for (const block of skipped) expect(block.notes.skip?.length, name(block)).toBeGreaterThan(10);
    expect(skipped.length).toBeLessThanOrEqual(Math.ceil(BLOCKS.length / 5));
  });
});
