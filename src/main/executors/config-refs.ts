import { serialize } from 'node:v8';
import type { ForkpoolConfig } from '../../shared/config.js';
import type { JobSpec, JobTask } from '../../shared/protocol.js';

/**
 * A job's config crosses to its worker thread once per distinct config, not once per job
 * (issue 40: memory per job in flight). A spawn burst posts every task at once (100,000 in the
 * bench's scale cell); each carried its own structured clone of the config, ~3 KB of native
 * memory while queued on the thread's port and a hundred objects the worker rebuilt and dropped.
 * Now a task carries a {@link ConfigRef} instead: a number, and the serialized config in a
 * SharedArrayBuffer made once (a SharedArrayBuffer crosses by reference, its bytes are not
 * copied). The worker's loader (config-ref.cts) turns it back into `spec.config`, deserializing
 * each ref once per thread, so a custom worker file still gets a whole spec.
 *
 * Equal configs are found by their serialized bytes, not by object identity: a config object
 * changed after an earlier job (a caller's `background` edited in place) is a new config.
 */
export interface ConfigRef {
  /** Unique among this executor's refs: the worker keeps each deserialized config by it. */
  id: number;
  /** The config as `v8.serialize` wrote it; never written again. */
  bytes: SharedArrayBuffer;
}

/** A task as the Piscina executor posts it: the spec without its config, and the config's ref. */
export type PostedTask = Omit<JobTask, 'spec'> & { spec: Omit<JobSpec, 'config'>; configRef: ConfigRef };

/** Distinct configs a pool remembers: a worktree job's config is its own, and the oldest is dropped. */
const RECENT_CONFIGS = 8;

export class ConfigRefs {
  #nextId = 0;
  /** Most recently used first. */
  #recent: Array<{ serialized: Buffer; ref: ConfigRef }> = [];

  /** The ref of a config equal to `config` (made now if none is remembered); undefined if it cannot be serialized. */
  refFor(config: ForkpoolConfig): ConfigRef | undefined {
    let serialized: Buffer;
    try {
      serialized = serialize(config);
    } catch {
      // Something a structured clone would refuse too: posted as it is, the pool says why.
      return undefined;
    }
    const index = this.#recent.findIndex((entry) => entry.serialized.equals(serialized));
    if (index >= 0) {
      const entry = this.#recent[index] as { serialized: Buffer; ref: ConfigRef };
      if (index > 0) {
        this.#recent.splice(index, 1);
        this.#recent.unshift(entry);
      }
      return entry.ref;
    }
    const bytes = new SharedArrayBuffer(serialized.length);
    new Uint8Array(bytes).set(serialized);
    const ref = { id: ++this.#nextId, bytes };
    this.#recent.unshift({ serialized, ref });
    if (this.#recent.length > RECENT_CONFIGS) this.#recent.pop();
    return ref;
  }

  /** `task` as it is posted: its config by ref (or whole, when it cannot be serialized). */
  posted<T extends JobTask>(task: T): T | PostedTask {
    const { config, ...spec } = task.spec;
    const configRef = this.refFor(config);
    return configRef ? { ...task, spec, configRef } : task;
  }
}
