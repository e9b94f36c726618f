/**
 * Child processes a piece of work starts, and whether the event loop turned while each ran:
 * what tells git awaited off the main thread (spawn, awaited) from git run synchronously
 * (spawnSync makes no PROCESSWRAP, and no turn passes while it works). Not re-exported from
 * index.ts: only the git tests need it.
 */
import { createHook } from 'node:async_hooks';

export interface ChildWatch {
  /** Event-loop turns each child process saw while alive, in the order they started. */
  turnsPerChild(): number[];
  /** How many of them are still running now (not yet reaped: Node reaps a child before its 'exit'). */
  running(): number;
  stop(): void;
}

/** Starts watching: every child process started from now on is counted, with the turns it saw. `onChild`: called at each start with the count so far. */
export function watchChildren(onChild?: (count: number) => void): ChildWatch {
  const seen = new Map<number, number>();
  const live = new Set<number>();
  const handles: Array<{ pid?: number }> = [];
  const hook = createHook({
    init(id, type, _trigger, resource) {
      if (type !== 'PROCESSWRAP') return;
      handles.push(resource);
      seen.set(id, 0);
      live.add(id);
      onChild?.(seen.size);
    },
    destroy(id) {
      live.delete(id);
    },
  }).enable();
  let done = false;
  // setImmediate runs once per turn of the loop.
  const spin = () => {
    if (done) return;
    for (const id of live) seen.set(id, (seen.get(id) ?? 0) + 1);
    setImmediate(spin);
  };
  setImmediate(spin);
  return {
    turnsPerChild: () => [...seen.values()],
    running: () => handles.filter((handle) => handle.pid !== undefined && isRunning(handle.pid)).length,
    stop: () => {
      done = true;
      hook.disable();
    },
  };
}

function isRunning(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** Runs `work` under {@link watchChildren}. */
export async function childrenDuring<T>(work: () => Promise<T>): Promise<{ value: T; turnsPerChild: number[] }> {
  const watch = watchChildren();
  try {
    return { value: await work(), turnsPerChild: watch.turnsPerChild() };
  } finally {
    watch.stop();
  }
}
