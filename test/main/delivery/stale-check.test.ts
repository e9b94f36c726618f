/**
 * The stale-on-arrival check runs on the main thread at every delivery: it is asynchronous (the
 * event loop turns while files are stat'ed and hashed: running jobs' events are not held up) and
 * bounded (at most `hashBytes` hashed per delivery: past it, a changed size or time counts as
 * modified without reading the file). Real files in a temp workspace; the loop's turns counted.
 */
import { createHash } from 'node:crypto';
import { statSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { staleFilesByJob } from '../../../src/main/delivery/staleness.js';
import type { FileRead } from '../../../src/shared/protocol.js';
import { makeWorkspace, useCleanup } from '../../helpers/index.js';

const cleanups = useCleanup();
const MB = 1024 * 1024;

/** A file of `bytes`, as a job read it; then touched (same bytes, a later time), so only its hash can say it is unchanged. */
function touchedRead(root: string, name: string, bytes: number): FileRead {
  const content = Buffer.alloc(bytes, name);
  writeFileSync(join(root, name), content);
  const read: FileRead = {
    path: name,
    sha256: createHash('sha256').update(content).digest('hex'),
    size: bytes,
    mtimeMs: statSync(join(root, name)).mtimeMs,
    readAt: Date.now(),
    ranges: [],
  };
  const later = new Date(Date.now() + 60_000);
  utimesSync(join(root, name), later, later);
  return read;
}

describe('the stale-file check', () => {
  it('lets the event loop turn while it stats and hashes, and still tells touched, modified and deleted files apart', async () => {
    const root = await makeWorkspace(cleanups);
    const touched = Array.from({ length: 12 }, (_, i) => touchedRead(root, `touched-${i}.bin`, MB));
    const modified = touchedRead(root, 'modified.txt', 1_000);
    writeFileSync(join(root, 'modified.txt'), 'other bytes');
    const deleted = { ...touchedRead(root, 'deleted.txt', 10), path: 'gone.txt' };

    let done = false;
    let turns = 0;
    const check = staleFilesByJob(
      [{ id: 'a', reads: touched.slice(0, 6) }, { id: 'b', reads: [...touched.slice(6), modified, deleted] }, { id: 'c' }],
      root,
    ).finally(() => (done = true));
    const spin = () => {
      if (done) return;
      turns++;
      setImmediate(spin);
    };
    setImmediate(spin);
    const stale = await check;

    // A synchronous check finishes before the loop turns once.
    expect(turns).toBeGreaterThan(0);
    expect(stale.get('a')).toEqual([]);
    expect(stale.get('b')?.map((f) => [f.path, f.change])).toEqual([
      ['modified.txt', 'modified'],
      ['gone.txt', 'deleted'],
    ]);
    expect(stale.get('c')).toEqual([]);
  });

  it('hashes at most hashBytes per delivery: past it, a touched file counts as modified, unread', async () => {
    const root = await makeWorkspace(cleanups);
    const reads = ['one.bin', 'two.bin', 'three.bin'].map((name) => touchedRead(root, name, MB));
    const bounded = await staleFilesByJob([{ id: 'a', reads }], root, { concurrency: 1, hashBytes: 2 * MB });
    expect(bounded.get('a')?.map((f) => [f.path, f.change])).toEqual([['three.bin', 'modified']]);
    const roomy = await staleFilesByJob([{ id: 'a', reads }], root, { concurrency: 3, hashBytes: 3 * MB });
    expect(roomy.get('a')).toEqual([]);
  });
});
