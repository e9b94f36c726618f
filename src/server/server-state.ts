import { monitorEventLoopDelay, type IntervalHistogram } from 'node:perf_hooks';
import type { Logger } from 'pino';
import { AgentSession } from '../main/session/agent-session.js';
import type { Executor } from '../main/executors/executor.js';
import type { JobRecord } from '../main/ledger/ledger.js';
import { BackgroundManager } from '../main/jobs/manager.js';
import type { ForkpoolConfig } from '../shared/config.js';
import type { ToolDefinition } from '../shared/tool-contract.js';
import { redactionSecrets } from '../shared/tools/host-secrets.js';
import { redactSecrets } from '../shared/tools/secrets.js';
import { addUsage, emptyUsage, type Usage } from '../shared/usage.js';
import { EventHub } from './event-hub.js';
import { JobDurations } from './job-durations.js';
import type { LedgerStore } from '../main/ledger/ledger-store.js';
import { openSqliteLedger } from '../main/ledger/sqlite-store.js';
import { ProgressTracker, jobSummary } from './job-view.js';
import { jobRef, parseJobRef, type JobSource } from './job-list.js';

/** The ledger scope of the server's own jobs (each session has its own). */
export const SERVER_SCOPE = 'server';
export interface ServerStateOptions {
  config: ForkpoolConfig;
  /** Where jobs run; shared by the server's manager and every session. Closed with the server. */
  executor: Executor;
  logger?: Logger;
  /** Events kept for `Last-Event-ID` resume. */
  eventBufferSize: number;
  maxSessions: number;
  /** The server's bearer token: scrubbed from every response like a key. */
  token?: string;
  /** Host tools in the catalog of the manager and of every session. */
  tools?: readonly ToolDefinition[];
}

/** Cumulative usage of ended jobs, by role and model: counters for `/metrics` and the page's totals. */
export type UsageCounters = Map<string, { role: string; model: string; usage: Usage }>;

/**
 * What the server holds: the manager for `/v1/jobs`, the sessions, the event hub and the
 * counters. It only reads events and the ledger; it never reaches into a job.
 */
export class ServerState {
  readonly config: ForkpoolConfig;
  readonly manager: BackgroundManager;
  readonly executor: Executor;
  readonly hub: EventHub;
  readonly progress = new ProgressTracker();
  readonly sessions = new Map<string, AgentSession>();
  readonly usage: UsageCounters = new Map();
  readonly endedByStatus = new Map<string, number>();
  /** How long ended jobs took, for /metrics' histogram. */
  readonly jobDurations = new JobDurations();
  readonly loopDelay: IntervalHistogram;
  readonly startedAt = Date.now();
  readonly #options: ServerStateOptions;
  readonly #secrets: string[];
  /** The durable ledger (`ledger.path`): the server's jobs (scope "server") and every session's. */
  readonly #store: LedgerStore | undefined;
  #nextSession = 1;

  constructor(options: ServerStateOptions) {
    this.#options = options;
    this.config = options.config;
    this.executor = options.executor;
    this.hub = new EventHub(options.eventBufferSize);
    // Every key the config holds, the process environment's credentials and the server's own token.
    this.#secrets = [...redactionSecrets(options.config), ...(options.token === undefined ? [] : [options.token])];
    const path = options.config.ledger.path;
    this.#store =
      path === undefined
        ? undefined
        : openSqliteLedger(path, { synchronous: options.config.ledger.synchronous, leaseStaleMs: options.config.ledger.leaseStaleMs });
    // Session ids go on after the ones the ledger holds: a new session never resumes an old one.
    for (const { id } of this.#store?.sessions() ?? []) this.#nextSession = Math.max(this.#nextSession, Number(/^s-(\d+)$/.exec(id)?.[1] ?? 0) + 1);
    try {
      this.manager = new BackgroundManager({
        config: options.config,
        executor: options.executor,
        closeExecutor: false,
        ...(options.logger ? { logger: options.logger } : {}),
        ...(options.tools ? { tools: options.tools } : {}),
        ...(this.#store ? { store: this.#store.jobs(SERVER_SCOPE) } : {}),
      });
    } catch (error) {
      // Another server holds the ledger's "server" scope (LEDGER_BUSY), or the config is wrong: the file is not left open.
      this.#store?.close();
      throw error;
    }
    this.#follow(this.manager, null);
    this.loopDelay = monitorEventLoopDelay({ resolution: 20 });
    this.loopDelay.enable();
  }

  /** Text with the model's key taken out: every response, event and metric goes through it. */
  scrub(text: string): string {
    return this.#secrets.length === 0 ? text : redactSecrets(text, this.#secrets);
  }

  /** An open session, or one the durable ledger holds (resumed now: its conversation and jobs). */
  session(id: string): AgentSession | undefined {
    const open = this.sessions.get(id);
    if (open || !this.#store?.loadSession(id) || this.sessions.size >= this.#options.maxSessions) return open;
    return this.createSession(id).session;
  }

  createSession(resumeId?: string): { id: string; session: AgentSession } {
    if (this.sessions.size >= this.#options.maxSessions) throw new Error(`at most ${this.#options.maxSessions} sessions at once`);
    const id = resumeId ?? `s-${this.#nextSession++}`;
    const session = new AgentSession({
      config: this.config,
      executor: this.executor,
      closeExecutor: false,
      ...(this.#options.logger ? { logger: this.#options.logger } : {}),
      ...(this.#options.tools ? { tools: this.#options.tools } : {}),
      ...(this.#store ? { ledgerStore: this.#store, sessionId: id } : {}),
    });
    this.#follow(session.manager, id);
    session.on('delivered', ({ turn, jobs }) => this.hub.publish('delivered', { session: id, turn, jobs: jobs.map((j) => j.id) }));
    this.sessions.set(id, session);
    return { id, session };
  }

  #follow(manager: BackgroundManager, session: string | null): void {
    // Every event of a job a parent's call started names that call (`parentToolId`, issue 38 C7).
    const callOf = (record: Readonly<JobRecord> | undefined) => (record?.parentToolId !== undefined ? { parentToolId: record.parentToolId } : {});
    const summary = (record: Readonly<JobRecord>) => ({
      session,
      ...callOf(record),
      job: jobSummary(record, this.progress.get(progressKey(session, record.id))),
    });
    manager.on('spawned', (record) => this.hub.publish('spawned', summary(record)));
    manager.on('started', (record) => this.hub.publish('started', summary(record)));
    manager.on('requeued', (record) => {
      // A restarted or re-run job counts its tool calls afresh.
      this.progress.forget(progressKey(session, record.id));
      this.hub.publish('requeued', summary(record));
    });
    manager.on('progress', ({ jobId, event, parentToolId }) => {
      const progress = this.progress.onEvent(progressKey(session, jobId), event);
      const call = parentToolId !== undefined ? { parentToolId } : {};
      const branch = manager.get(jobId)?.branch;
      this.hub.publish('progress', {
        session,
        jobId,
        ...call,
        ...(branch !== undefined ? { branch } : {}),
        event,
        currentTool: progress.currentTool,
        tokens: progress.tokens,
        toolCalls: progress.toolCalls,
        retrying: progress.retrying,
      });
      if (event.type === 'loop_warning' || event.type === 'retry') this.hub.publish('alert', { session, jobId, ...call, event });
    });
    manager.on('done', (record) => {
      // Its counts stay (the page shows an ended job's tool calls); only the live part goes.
      this.progress.settle(progressKey(session, record.id));
      this.endedByStatus.set(record.status ?? 'failed', (this.endedByStatus.get(record.status ?? 'failed') ?? 0) + 1);
      this.jobDurations.observe(record.status ?? 'failed', Math.max(0, ((record.endedAt ?? Date.now()) - record.queuedAt) / 1000));
      for (const [model, usage] of Object.entries(record.usage)) {
        const key = `${record.role}\u0000${model}`;
        const entry = this.usage.get(key) ?? { role: record.role, model, usage: emptyUsage() };
        entry.usage = addUsage(entry.usage, usage);
        this.usage.set(key, entry);
      }
      this.hub.publish('done', summary(record));
    });
    // A job waits for a person's (or a program's) answer, and the answer: the page and clients show and clear the question.
    manager.on('approval-requested', (approval) => this.hub.publish('approval-requested', { session, ...callOf(manager.get(approval.jobId)), approval }));
    manager.on('approval-resolved', (approval) => this.hub.publish('approval-resolved', { session, ...callOf(manager.get(approval.jobId)), approval }));
    // A job fell asleep (scheduler sleep): its summary says until when; `started` follows when it wakes and runs.
    manager.on('sleeping', (record) => this.hub.publish('sleeping', summary(record)));
    manager.on('wave-done', ({ wave, jobs }) => this.hub.publish('wave-done', { session, wave, jobs: jobs.map((j) => j.id) }));
  }

  /**
   * The durable ledger as `/healthz` shows it: `off` without one; `ok`; or `degraded` since a
   * write failed (the first failure's SQLite code and message, since when, and how many job
   * records wait in memory to be written), over the server's manager and every open session's.
   */
  ledgerHealth():
    { state: 'off' } | { state: 'ok' } | { state: 'degraded'; error: { code: string; message: string }; since: number; unsaved: number; failedWrites: number } {
    if (!this.#store) return { state: 'off' };
    const healths = [this.manager, ...[...this.sessions.values()].map((s) => s.manager)].map((m) => m.ledgerHealth());
    const failing = healths.filter((h) => !h.ok);
    if (failing.length === 0) return { state: 'ok' };
    const first = failing.flatMap((h) => (h.failure ? [h.failure] : [])).sort((a, b) => a.since - b.since)[0];
    return {
      state: 'degraded',
      error: { code: first?.code ?? 'UNKNOWN', message: first?.message ?? 'records wait to be written' },
      since: first?.since ?? Date.now(),
      unsaved: failing.reduce((n, h) => n + h.unsaved, 0),
      failedWrites: healths.reduce((n, h) => n + h.failedWrites, 0),
    };
  }

  /** The server's own manager, then each open session's: every job the API lists. */
  sources(): JobSource[] {
    return [{ session: null, manager: this.manager }, ...[...this.sessions.entries()].map(([session, s]) => ({ session, manager: s.manager }))];
  }

  /** Jobs in each state over every source, from the ledgers' own counts (not from a listing). */
  jobCounts(): Record<JobRecord['state'], number> {
    const counts = { queued: 0, running: 0, ended: 0 };
    for (const { manager } of this.sources()) for (const key of ['queued', 'running', 'ended'] as const) counts[key] += manager.count(key);
    return counts;
  }

  /** A job by its ref (`id`, or `session/id` for an open session's job; see job-list.ts), with its manager. */
  findJob(ref: string): { session: string | null; manager: BackgroundManager; record: Readonly<JobRecord> } | undefined {
    const { session, id } = parseJobRef(ref);
    const manager = session === null ? this.manager : this.sessions.get(session)?.manager;
    const record = manager?.find(id);
    return manager && record ? { session, manager, record } : undefined;
  }

  /** Every usage counter summed (the page's totals). */
  totalUsage(): Usage {
    let total = emptyUsage();
    for (const { usage } of this.usage.values()) total = addUsage(total, usage);
    return total;
  }

  /**
   * Stops intake everywhere and closes the manager and sessions within the config's bound,
   * then the executor. Returns the jobs that had to be hard-stopped.
   */
  async close(): Promise<{ cancelled: string[]; stragglers: string[] }> {
    const reports = await Promise.all([
      this.manager.close(),
      ...[...this.sessions.entries()].map(([id, s]) =>
        s.close().then((r) => ({ cancelled: r.cancelled.map((j) => `${id}/${j}`), stragglers: r.stragglers.map((j) => `${id}/${j}`) })),
      ),
    ]);
    await this.executor.close();
    this.#store?.close();
    this.loopDelay.disable();
    return { cancelled: reports.flatMap((r) => r.cancelled), stragglers: reports.flatMap((r) => r.stragglers) };
  }
}

/** Progress is kept by job ref: the server's job ids and a session's may be the same. */
const progressKey = jobRef;
