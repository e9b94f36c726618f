import { configForAgent } from '../../shared/agents.js';
import type { ForkpoolConfig } from '../../shared/config.js';
import { GATED_TOOLS } from '../../shared/fixed-limits.js';
import type { JobRecord } from '../ledger/ledger.js';
import type { SpawnRequest } from './manager-api.js';

/** How a spawn was de-duplicated: it joined a running job, or got a recent job's result. */
export type DedupMatch = { kind: 'attached'; id: string } | { kind: 'reused'; id: string; ageMs: number };

/** Ended jobs remembered for reuse (the newest; older ones are forgotten). */
const REMEMBERED_ENDED = 1_000;

/**
 * Spawn de-duplication. A spawn whose normalized task (case and whitespace), role, agent and
 * model match a job still queued or running joins it; one that matches a job that ended `ok`
 * within `dedup.reuseWithinSeconds` gets that job's result instead of running again. Never for
 * an agent that can change things (its tools include bash, write_file or edit_file), never for
 * a spawn with a name or a session summary (`full_context`): those are not the same request,
 * whatever the task says; nor for an `agent_<name>` call (it spawns with `dedup: false`). A
 * spawn's own spec (prompt, tools, model) is part of the key. Top-level spawns match top-level
 * jobs and a job's spawns match other jobs' children, so each result still reaches its caller
 * by the usual path.
 */
export class SpawnDedup {
  readonly #config: ForkpoolConfig;
  readonly #live = new Map<string, string>();
  readonly #ended = new Map<string, string>();

  constructor(config: ForkpoolConfig) {
    this.#config = config;
  }

  /** The request's key, or undefined when it must never be de-duplicated. */
  keyFor(request: SpawnRequest, nested: boolean): string | undefined {
    const { attach, reuseWithinSeconds } = this.#config.dedup;
    if (!attach && reuseWithinSeconds <= 0) return undefined;
    if (typeof request.task !== 'string' || request.name !== undefined || request.parentSummary) return undefined;
    const role = request.role ?? 'primary';
    const agent = request.agent ?? (role === 'user' ? this.#config.background.defaultAgent : undefined);
    let model: string;
    let tools: readonly string[];
    try {
      const config = configForAgent(this.#config, agent);
      tools = request.tools ?? config.tools;
      if (tools.some((tool) => (GATED_TOOLS as readonly string[]).includes(tool))) return undefined;
      model = request.model ?? config.model;
    } catch {
      return undefined; // an unknown agent: admission says so
    }
    const ownSpec = [
      request.systemPrompt ?? '',
      request.replaceSystemPrompt === true,
      request.tools === undefined ? '' : [...new Set(tools)].sort(),
      // A typed spawn joins only a job bound to the same schema (an untyped one has no `data`).
      JSON.stringify(request.outputSchema ?? null),
      request.turnTimeoutMs ?? '',
    ];
    return JSON.stringify([nested ? 'child' : 'top', role, agent ?? '', model, normalizeTask(request.task), ...ownSpec]);
  }

  /** A job this spawn may join or reuse, checked against the ledger as it is now. */
  find(key: string, get: (id: string) => Readonly<JobRecord> | undefined, now = Date.now()): DedupMatch | undefined {
    const { attach, reuseWithinSeconds } = this.#config.dedup;
    const liveId = this.#live.get(key);
    const live = liveId === undefined ? undefined : get(liveId);
    if (attach && live && live.state !== 'ended') return { kind: 'attached', id: live.id };
    const endedId = this.#ended.get(key);
    const ended = endedId === undefined ? undefined : get(endedId);
    if (reuseWithinSeconds <= 0 || !ended || ended.state !== 'ended' || ended.status !== 'ok' || ended.resultText === undefined || ended.endedAt === undefined)
      return undefined;
    const ageMs = now - ended.endedAt;
    return ageMs <= reuseWithinSeconds * 1_000 ? { kind: 'reused', id: ended.id, ageMs } : undefined;
  }

  /** A new job was booked under this key. */
  booked(id: string, key: string): void {
    this.#live.set(key, id);
  }

  /**
   * Restart recovery: the jobs a durable ledger holds, with the keys they were booked under.
   * Unfinished ones (queued again or re-run) are joinable again; those that ended ok are
   * reusable, the newest ending per key winning.
   */
  restore(jobs: ReadonlyArray<{ record: Readonly<JobRecord>; key: string }>): void {
    for (const { record, key } of jobs) if (record.state !== 'ended') this.booked(record.id, key);
    const endedOk = jobs.filter(({ record }) => record.state === 'ended' && record.status === 'ok');
    endedOk.sort((a, b) => (a.record.endedAt ?? 0) - (b.record.endedAt ?? 0));
    for (const { record, key } of endedOk) this.ended(record, key);
  }

  /** A job booked under `key` ended: no longer joinable; reusable if it ended ok. */
  ended(record: Readonly<JobRecord>, key: string | undefined): void {
    if (key === undefined) return;
    if (this.#live.get(key) === record.id) this.#live.delete(key);
    if (record.status !== 'ok') return;
    this.#ended.delete(key);
    this.#ended.set(key, record.id);
    if (this.#ended.size > REMEMBERED_ENDED) this.#ended.delete(this.#ended.keys().next().value as string);
  }
}

/** Case and whitespace do not make a task different. */
export function normalizeTask(task: string): string {
  return task.trim().replace(/\s+/g, ' ').toLowerCase();
}
