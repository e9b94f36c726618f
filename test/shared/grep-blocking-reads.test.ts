/**
 * grep opens small walked files with blocking calls (walk.ts `openWalkedFileSync`). When that open
 * meets the open-file limit (EMFILE), the file goes to the async path, which waits for a descriptor
 * and retries: it is never counted unreadable (a search once answered "no matches" that way). The
 * limit is simulated on the blocking open only, so only the fallback can find the matches.
 */
import * as fs from 'node:fs';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { grepTool } from '../../src/shared/tools/grep.js';
import { useCleanup } from '../helpers/cleanup.js';
import { tempWorkspace } from '../helpers/config.js';
import { toolContext } from '../helpers/sandbox.js';

const limit = vi.hoisted(() => ({ blockingOpensFail: 0, tried: 0 }));

vi.mock('node:fs', async (importOriginal) => {
  const actual = await importOriginal<typeof fs>();
  const openSync = ((file: fs.PathLike, ...rest: unknown[]) => {
    // Only the walk's opens of files beside a held folder (/proc/self/fd/N/name).
    if (limit.blockingOpensFail > 0 && /^\/proc\/self\/fd\/\d+\/f\d\.txt$/.test(String(file))) {
      limit.blockingOpensFail--;
      limit.tried++;
      throw Object.assign(new Error('EMFILE: too many open files'), { code: 'EMFILE' });
    }
    return (actual.openSync as (...args: unknown[]) => number)(file, ...rest);
  }) as typeof fs.openSync;
  return { ...actual, openSync, default: { ...actual, openSync } };
});

const cleanup = useCleanup();
afterEach(() => {
  limit.blockingOpensFail = 0;
  limit.tried = 0;
});

describe('grep: blocking reads of small files', () => {
  it('a blocking open at the open-file limit falls back to the async open (which waits and retries): every match is found', async () => {
    const ws = tempWorkspace(Object.fromEntries(Array.from({ length: 5 }, (_, i) => [`deep/f${i}.txt`, `the needle ${i}\n`])), cleanup);
    limit.blockingOpensFail = 5;
    const out = await grepTool.run({ pattern: 'needle' }, toolContext(ws));
    expect(limit.tried).toBe(5);
    for (let i = 0; i < 5; i++) expect(out).toContain(`deep/f${i}.txt:1: the needle ${i}`);
    expect(out).not.toContain('unreadable');
  });

  it('without the limit, small files are read by the blocking path and give the same answer', async () => {
    const ws = tempWorkspace({ 'a/f1.txt': 'one needle\n', 'a/f2.txt': 'no\n' }, cleanup);
    const out = await grepTool.run({ pattern: 'needle' }, toolContext(ws));
    expect(out).toBe('a/f1.txt:1: one needle');
  });
});
