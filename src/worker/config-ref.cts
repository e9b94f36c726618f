/**
 * The worker's side of a config sent by reference (src/main/executors/config-refs.ts): a task
 * carries `configRef` (a number and the serialized config in a SharedArrayBuffer) in place of
 * `spec.config`. This puts the config back before any entry code sees the task, deserializing
 * each ref once per thread: the jobs of one config share one raw copy here (the entry then
 * validates and holds its own, thread-shared.ts). CommonJS, as loader.cts (which uses it).
 */
// eslint-disable-next-line @typescript-eslint/no-require-imports -- CommonJS on purpose (see loader.cts)
import v8 = require('node:v8');

/** Raw configs by ref id, most recently used last; a pool has at most a few distinct configs at once. */
const configs = new Map<number, unknown>();
const KEPT_CONFIGS = 16;

/**
 * Sets `task.spec.config` from `task.configRef` and drops the ref. A ref that cannot be read
 * leaves the spec without a config: the entry's check then fails the job with a clear error.
 */
function resolveConfigRef(task: unknown): void {
  const carrier = task as { spec?: unknown; configRef?: { id?: unknown; bytes?: unknown } } | null;
  const ref = carrier?.configRef;
  if (!carrier || ref === undefined) return;
  delete carrier.configRef;
  const spec = carrier.spec;
  if (typeof spec !== 'object' || spec === null || typeof ref.id !== 'number' || !(ref.bytes instanceof SharedArrayBuffer)) return;
  let config = configs.get(ref.id);
  if (config === undefined) {
    try {
      config = v8.deserialize(Buffer.from(ref.bytes));
    } catch {
      return;
    }
    if (configs.size >= KEPT_CONFIGS) configs.delete(configs.keys().next().value as number);
  } else configs.delete(ref.id);
  configs.set(ref.id, config);
  (spec as { config?: unknown }).config = config;
}

export = resolveConfigRef;
