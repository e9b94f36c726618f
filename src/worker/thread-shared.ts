/**
 * What the jobs of one thread share instead of each keeping its own (issue 23: memory per job
 * in flight in `shared` isolation). A job's spec arrives as its own structured clone, config
 * included (about a hundred objects and strings); jobs with equal configs hold one copy here,
 * for as long as one of them runs. The derived policy and secrets are cached with it.
 */
import { z } from 'zod';
import type { ForkpoolConfig } from '../shared/config.js';
import { jobSpecSchema, type JobSpec } from '../shared/protocol.js';
import { configuredSecrets } from '../shared/tools/secrets.js';
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
  entry.jobs++;
  const shared = entry;
  let released = false;
  return {
    config: shared.config,
    release: () => {
      if (released) return;
      released = true;
      if (--shared.jobs === 0 && held.get(shared.key) === shared) held.delete(shared.key);
    },
  };
}

/**
 * A task's spec, validated, with the thread's copy of its config; `release` when the job ends.
 * The parse result is not kept: held by a job, it would be a copy of the config per job again.
 */
export function checkedSpec(raw: unknown): { spec: JobSpec; release: () => void } | { invalid: string } {
  const parsed = jobSpecSchema.safeParse(raw);
  if (!parsed.success) return { invalid: z.prettifyError(parsed.error) };
  const own = parsed.data as JobSpec;
  const { config, release } = holdConfig(own.config);
  return { spec: { ...own, config }, release };
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

/** {@link configuredSecrets}, once per config object. */
export function secretsFor(config: ForkpoolConfig): readonly string[] {
  let keys = secrets.get(config);
  if (!keys) {
    keys = configuredSecrets(config);
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
