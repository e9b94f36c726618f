import type { BackgroundManager, JobAlert } from '../jobs/manager.js';

/** What a job did lately, for `check_background_agent` and `list_background_agents`. */
export interface JobActivityView {
  /** The last few tool calls, oldest first. */
  toolCalls: ReadonlyArray<{ name: string; args: string; at: number }>;
  /** The last thing its model said (partial findings), capped. */
  text?: string;
  alerts: readonly JobAlert[];
  lastActivityAt?: number;
  /** Bumped by every change: a check compares it with the last one it saw. */
  version: number;
}

interface Entry {
  toolCalls: Array<{ name: string; args: string; at: number }>;
  text?: string;
  alerts: JobAlert[];
  lastActivityAt?: number;
  version: number;
  lastCheck?: { at: number; version: number };
}

const KEPT_TOOL_CALLS = 5;
/** Jobs whose activity is kept (the oldest is forgotten past it). */
const KEPT_JOBS = 1_000;

/**
 * Per-job activity read from the manager's events (never from conversation memory): after a
 * compaction of the parent's history it is still right. Bounded: a few calls per job, a
 * thousand jobs.
 */
export class JobActivity {
  readonly #jobs = new Map<string, Entry>();
  readonly #now: () => number;

  constructor(manager: BackgroundManager, now: () => number = Date.now) {
    this.#now = now;
    manager.on('progress', ({ jobId, event }) => {
      if (event.type === 'tool_call') {
        const entry = this.#touch(jobId);
        entry.toolCalls.push({ name: event.name, args: event.argsPreview, at: this.#now() });
        if (entry.toolCalls.length > KEPT_TOOL_CALLS) entry.toolCalls.shift();
      } else if (event.type === 'assistant_text') {
        this.#touch(jobId).text = event.text;
      } else if (event.type === 'model_response') {
        this.#touch(jobId);
      }
    });
    manager.on('alert', (alert) => {
      this.#touch(alert.jobId).alerts.push(alert);
    });
    for (const type of ['started', 'done', 'requeued'] as const) manager.on(type, (record) => void this.#touch(record.id));
  }

  get(id: string): JobActivityView | undefined {
    const entry = this.#jobs.get(id);
    if (!entry) return undefined;
    return {
      toolCalls: entry.toolCalls,
      alerts: entry.alerts,
      version: entry.version,
      ...(entry.text !== undefined ? { text: entry.text } : {}),
      ...(entry.lastActivityAt !== undefined ? { lastActivityAt: entry.lastActivityAt } : {}),
    };
  }

  /**
   * Books a check of job `id`. Refused (returns the earlier check's time) when the job was
   * checked less than `cooldownMs` ago and nothing changed since: the model must not poll.
   */
  check(id: string, cooldownMs: number): { refusedSince?: number } {
    const entry = this.#touch(id, false);
    const now = this.#now();
    const last = entry.lastCheck;
    if (last && last.version === entry.version && now - last.at < cooldownMs) return { refusedSince: last.at };
    entry.lastCheck = { at: now, version: entry.version };
    return {};
  }

  #touch(id: string, changed = true): Entry {
    let entry = this.#jobs.get(id);
    if (!entry) {
      entry = { toolCalls: [], alerts: [], version: 0 };
      this.#jobs.set(id, entry);
      if (this.#jobs.size > KEPT_JOBS) this.#jobs.delete(this.#jobs.keys().next().value as string);
    }
    if (changed) {
      entry.version++;
      entry.lastActivityAt = this.#now();
    }
    return entry;
  }
}
