/**
 * A real disk that fills up: a small tmpfs (needs root and mount permission; else a reason to
 * skip), and a file that fills it to ENOSPC. A ledger on it fails its writes with SQLITE_FULL,
 * as on a full disk in production; deleting the filler makes room again.
 */
import { spawnSync } from 'node:child_process';
import { closeSync, mkdtempSync, openSync, rmSync, writeSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

export interface SmallDisk {
  dir: string;
  /** Fills the disk with one file (ENOSPC from then on). */
  fill(): void;
  /** Deletes the filler: there is room again. */
  free(): void;
  unmount(): void;
}

/** Mounts a tmpfs of `size`; `{ skip }` says why this machine does not let us. */
export function mountSmallDisk(size: string): SmallDisk | { skip: string } {
  if (process.getuid?.() !== 0) return { skip: 'not root: cannot mount a small tmpfs to fill' };
  const dir = mkdtempSync(path.join(os.tmpdir(), 'forkpool-small-disk-'));
  const mounted = spawnSync('mount', ['-t', 'tmpfs', '-o', `size=${size}`, 'tmpfs', dir], { encoding: 'utf8' });
  if (mounted.status !== 0) {
    rmSync(dir, { recursive: true, force: true });
    return { skip: `mount -t tmpfs is not permitted here (${(mounted.stderr || mounted.error?.message || '').trim()})` };
  }
  const filler = path.join(dir, 'filler');
  return {
    dir,
    fill: () => {
      const fd = openSync(filler, 'a');
      const chunk = Buffer.alloc(16 * 1024, 1);
      try {
        for (;;) writeSync(fd, chunk);
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'ENOSPC') throw error;
      } finally {
        closeSync(fd);
      }
    },
    free: () => rmSync(filler, { force: true }),
    unmount: () => {
      spawnSync('umount', ['-l', dir]);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
