/**
 * The block parser behind examples.test.ts: what it finds is what runs, so a block it missed, or
 * an annotation it misread, would silently go unchecked.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { codeBlocks } from './markdown-examples.js';

const dir = mkdtempSync(path.join(os.tmpdir(), 'forkpool-md-blocks-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const PAGE = [
  '# A page',
  '',
  '```sh',
  'forkpool fanout tasks.jsonl',
  '```',
  '',
  '- a list item',
  '',
  '  <!-- example: expect "ok" -->',
  '  ```ts',
  '  const a = 1; // in a list',
  '  ```',
  '',
  '<!-- example: continues -->',
  '<!-- example: setup const b = 2; -->',
  '````ts',
  'console.log(a + b);',
  '```',
  'still inside: a shorter fence does not close it',
  '````',
  '',
  '<!-- example: skip -->',
  '```',
  'no language',
  '```',
  '',
  '<!-- example: data (a task line) -->',
  '~~~json',
  '{"task": "x"}',
  '~~~',
].join('\n');

describe('the docs block parser', () => {
  it('finds every fence (indented, longer, tildes), runs an unannotated block, joins `continues`, and keeps an annotation it does not know', () => {
    writeFileSync(path.join(dir, 'page.md'), PAGE);
    const blocks = codeBlocks(dir, 'page.md');
    expect(blocks.map((b) => [b.line, b.lang])).toEqual([
      [3, 'sh'],
      [10, 'ts'],
      [16, 'ts'],
      [23, ''],
      [28, 'json'],
    ]);
    const [sh, listed, continued, bare, json] = blocks;
    expect(sh?.notes).toEqual({ setup: [], expect: [], unknown: [] });
    expect(listed?.code).toBe('const a = 1; // in a list');
    expect(listed?.notes.expect).toEqual(['ok']);
    expect(continued?.code).toBe('const a = 1; // in a list\nconsole.log(a + b);\n```\nstill inside: a shorter fence does not close it');
    expect(continued?.notes.setup).toEqual(['const b = 2;']);
    // A skip without its reason is not a skip: the test reports it as unknown.
    expect(bare?.notes.skip).toBeUndefined();
    expect(bare?.notes.unknown).toEqual(['skip']);
    expect(json?.notes.data).toBe('a task line');
  });
});
