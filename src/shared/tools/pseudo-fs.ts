import { readFileSync, statSync } from 'node:fs';

/**
 * Which files live on a pseudo file system (kernel state, processes, devices): the device
 * numbers the tools refuse to read or walk (see safe-fs.ts), from the mount table.
 */

/** File system types that expose kernel state, processes or devices: never walked or read. */
const PSEUDO_FS_TYPES = new Set([
  'proc',
  'sysfs',
  'devtmpfs',
  'devpts',
  'cgroup',
  'cgroup2',
  'debugfs',
  'tracefs',
  'securityfs',
  'configfs',
  'fusectl',
  'bpf',
  'pstore',
  'efivarfs',
  'binfmt_misc',
  'autofs',
  'mqueue',
  'hugetlbfs',
  'nsfs',
  'rpc_pipefs',
  'selinuxfs',
  'nfsd',
]);

/**
 * Device numbers (as `fs.Stats.dev`) of every pseudo file system mounted anywhere, read from
 * the mount table, so /proc bound under the workspace is recognised too. Bind mounts keep their
 * device number. Falls back to the numbers of /proc, /sys and /dev.
 */
export async function pseudoFsDevices(): Promise<ReadonlySet<number>> {
  return pseudoFsDevicesNow();
}

/**
 * {@link pseudoFsDevices}, synchronously: the table and the three stats are kernel state (no disk
 * to wait for), so four blocking calls of microseconds cost less than eight round trips through
 * libuv's pool. Read afresh on every call: a mount made during a job counts at once, and a
 * device number once seen on a regular file system may belong to a pseudo one after a remount.
 */
export function pseudoFsDevicesNow(): ReadonlySet<number> {
  const devices = new Set<number>();
  try {
    for (const device of mountTableDevices(readFileSync('/proc/self/mountinfo', 'utf8'))) devices.add(device);
  } catch {
    // No mount table: the well-known places only.
  }
  for (const p of ['/proc', '/sys', '/dev/pts']) {
    try {
      devices.add(statSync(p).dev);
    } catch {
      // absent here
    }
  }
  return devices;
}

/** The last mount table read and its pseudo file systems' devices: every file a tool opens reads it (issue 23: its parse was 5% of a job's garbage). */
let lastTable: { text: string; devices: readonly number[] } | undefined;

/** The devices of the pseudo file systems in `table` (/proc/self/mountinfo), parsed again only when it changed. */
function mountTableDevices(table: string): readonly number[] {
  if (lastTable?.text === table) return lastTable.devices;
  const devices: number[] = [];
  for (const line of table.split('\n')) {
    const [left, right] = line.split(' - ');
    const fsType = right?.split(' ')[0];
    const majorMinor = left?.split(' ')[2];
    if (!fsType || !majorMinor || !PSEUDO_FS_TYPES.has(fsType)) continue;
    const [major, minor] = majorMinor.split(':').map(Number);
    if (major !== undefined && minor !== undefined) devices.push(makeDev(major, minor));
  }
  lastTable = { text: table, devices };
  return devices;
}

/** glibc's makedev, which is how Linux reports `st_dev`. */
function makeDev(major: number, minor: number): number {
  return (minor & 0xff) + (major & 0xfff) * 0x100 + Math.floor(minor / 0x100) * 0x100000 + Math.floor(major / 0x1000) * 0x100000000;
}
