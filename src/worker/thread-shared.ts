/**
 * What the jobs of one thread share instead of each keeping its own (issue 23: memory per job
 * in flight in `shared` isolation). A job's spec arrives as its own structured clone, config
 * included (about a hundred objects and strings); jobs with equal configs hold one copy here,
 * for as long as one of them runs. The derived policy and secrets are cached with it.
 */
import { z } from 'zod';
import type { ForkpoolConfig } from '../shared/config.js';
import { jobSpecSchema, type JobSpec } from '../shared/protocol.js';
import { isMainThread } from 'node:worker_threads';
import { PROCESS_TAG_VAR } from '../shared/tools/process-tag.js';
import { redactionSecrets } from '../shared/tools/host-secrets.js';
import { scrubEnv } from '../shared/tools/secrets.js';
import { toolPolicyFrom } from '../shared/tools/policy.js';
import type { ToolPolicy } from '../shared/tools/types.js';

interface Held {
  key: string;
  config: ForkpoolConfig;
  jobs: number;
}

/** By the config's JSON: equal configs are one entry, released with the last job that holds it. */
const held = new Map<string, Held>();

/** The thread's copy of a config equal to `config` (this one if none), held until `release()`. */
export function holdConfig(config: ForkpoolConfig): { config: ForkpoolConfig; release: () => void } {
  const key = JSON.stringify(config);
  // The entry keeps the first job's key: a job keeps nothing of its own (its key is ~2.5 KB).
  let entry = held.get(key);
  if (!entry) {
    entry = { key, config, jobs: 0 };
    held.set(key, entry);
  }
  return hold(entry);
}

function hold(entry: Held): { config: ForkpoolConfig; release: () => void } {
  entry.jobs++;
  let released = false;
  return {
    config: entry.config,
    release: () => {
      if (released) return;
      released = true;
      if (--entry.jobs === 0 && held.get(entry.key) === entry) held.delete(entry.key);
    },
  };
}

/** The spec without its config: checked alone when the config is one the thread already validated. */
const specWithoutConfig = jobSpecSchema.omit({ config: true });

/**
 * A task's spec, validated, with the thread's copy of its config; `release` when the job ends.
 * A config whose JSON is that of one this thread validated and holds is not parsed again (the
 * parse was ~50 KB of garbage per job): parsing a parsed config gives it back, and the main
 * thread sends parsed configs. The parse result is not kept: held by a job, it would be a
 * copy of the config per job again.
 */
export function checkedSpec(raw: unknown): { spec: JobSpec; release: () => void } | { invalid: string } {
  const known = heldFor(raw);
  if (known) {
    const { config: _config, ...rest } = raw as Record<string, unknown>;
    const parsed = specWithoutConfig.safeParse(rest);
    if (!parsed.success) return { invalid: z.prettifyError(parsed.error) };
    const { config, release } = hold(known);
    return { spec: { ...(parsed.data as Omit<JobSpec, 'config'>), config }, release };
  }
  const parsed = jobSpecSchema.safeParse(raw);
  if (!parsed.success) return { invalid: z.prettifyError(parsed.error) };
  const own = parsed.data as JobSpec;
  const { config, release } = holdConfig(own.config);
  return { spec: { ...own, config }, release };
}

/** The held entry whose config has the JSON of `raw.config`, if any. */
function heldFor(raw: unknown): Held | undefined {
  if (held.size === 0 || typeof raw !== 'object' || raw === null) return undefined;
  const config = (raw as { config?: unknown }).config;
  if (typeof config !== 'object' || config === null) return undefined;
  try {
    return held.get(JSON.stringify(config));
  } catch {
    // Not JSON (a cycle, a BigInt): the full parse says what is wrong.
    return undefined;
  }
}

/** Configs the thread holds now (tests). */
export function heldConfigCount(): number {
  return held.size;
}

const policies = new WeakMap<object, ToolPolicy>();
const secrets = new WeakMap<object, readonly string[]>();

/** {@link toolPolicyFrom}, once per config object (read only: the tools never change it). */
export function policyFor(config: ForkpoolConfig): ToolPolicy {
  let policy = policies.get(config);
  if (!policy) {
    policy = toolPolicyFrom(config);
    policies.set(config, policy);
  }
  return policy;
}

/** {@link redactionSecrets}: the config's keys and the process environment's credentials, once per config object. */
export function secretsFor(config: ForkpoolConfig): readonly string[] {
  let keys = secrets.get(config);
  if (!keys) {
    keys = redactionSecrets(config);
    secrets.set(config, keys);
  }
  return keys;
}

/** Texts many jobs of a thread repeat (their system prompt): the most recent, one copy each. */
const texts = new Map<string, string>();
const MAX_TEXTS = 64;

/** An equal string the thread already holds, else `text` (then kept, the oldest dropped past the bound). */
export function sharedText(text: string): string {
  const known = texts.get(text);
  if (known !== undefined) return known;
  if (texts.size >= MAX_TEXTS) texts.delete(texts.keys().next().value as string);
  texts.set(text, text);
  return text;
}

/** A worker thread's environment is its own copy, set when it started: scrubbed once. */
let threadEnv: Readonly<Record<string, string>> | undefined;

/**
 * The environment a job's commands get: the scrubbed environment, with its process tag. On the
 * main thread (the inline executor) read afresh: the host may change `process.env`.
 */
export function jobEnv(processTag: string | undefined): Readonly<Record<string, string>> {
  const base = isMainThread ? scrubEnv(process.env) : (threadEnv ??= Object.freeze(scrubEnv(process.env)));
  return processTag ? { ...base, [PROCESS_TAG_VAR]: processTag } : base;
}
