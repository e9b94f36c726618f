import type { ForkpoolConfig } from '../../shared/config.js';
import { errorForRecord } from '../../shared/error-detail.js';
import type { DeliveryLedger } from '../ledger/ledger.js';
import type { JobBudgets } from '../limits/budgets.js';
import type { JobApprovals } from './approvals.js';
import type { JobSleeps } from './sleeps.js';
import type { SpawnDedup } from './dedup.js';
import type { Dispatcher } from './dispatcher.js';
import type { JobContext } from './job.js';
import type { JobTable } from './job-table.js';
import type { JobTraces } from './job-traces.js';
import type { JobWorktrees } from './job-worktrees.js';
import type { Emit } from './manager-api.js';
import type { Nesting } from './nesting.js';
import type { Restarts } from './restarts.js';
import type { JobSpeculation } from './speculation.js';
import type { JobTranscripts } from './transcripts.js';

/** The books a job's moves and its end are entered in: the engine's parts, as engine.ts made them. */
export interface JobBooks {
  readonly config: ForkpoolConfig;
  readonly budgets: JobBudgets;
  readonly dispatcher: Dispatcher;
  readonly speculation: JobSpeculation;
  readonly worktrees: JobWorktrees;
  readonly nesting: Nesting;
  readonly dedup: SpawnDedup;
  readonly table: JobTable;
  readonly restarts: Restarts;
  readonly transcripts: JobTranscripts;
  readonly traces: JobTraces;
  readonly approvals: JobApprovals;
  readonly sleeps: JobSleeps;
  emit: Emit;
  checkWave(wave: number): void;
  reportFault(what: string, error: unknown): void;
}

/**
 * What each Job needs of the engine (see JobContext): its phase moves go to the dispatcher, its
 * ending is completed by the budget, speculation, its worktree and its children, and once it
 * has ended every book hears of it, each in its own `try`. `books` is read late: the parts are
 * made after the table, which hands this context to every job.
 */
export function jobContext(ledger: DeliveryLedger, durable: boolean, books: () => JobBooks): JobContext {
  return {
    ledger,
    durable,
    moved: (job, from, to) => books().dispatcher.moved(job, from, to),
    completeEnding: (job, given) => {
      const { budgets, speculation, config, worktrees, nesting } = books();
      // Its spend is charged to the session pool (the rest of its lease returns); its record gets the report; a dropped guess's error says why.
      const ending = { ...given, ...budgets.atEnd(job.id, job.record, given), ...speculation.atEnd(job, given) };
      const error = ending.error && errorForRecord(ending.error, config.errorDetail, config.workspaceRoot);
      // A worktree job's changes are committed on its branch now, and its result says so.
      const tree = worktrees.finish(job.id, job.record.label, ending.byClose === true);
      if (tree !== undefined) ending.resultText = ending.resultText ? `${ending.resultText}\n\n${tree}` : tree;
      return { ...ending, ...(error ? { error } : {}), ...nesting.childrenAtEnd(job, ending) };
    },
    ended: (job, ended) => {
      const b = books();
      // Each book in its own try: one that throws (a parent's delivery the disk refused) must
      // not keep the others from hearing of the ending (its name, `done`, its wave, the queue).
      const step = (what: string, run: () => void) => {
        try {
          run();
        } catch (error) {
          b.reportFault(`job ${job.id} ended, but ${what} failed`, error);
        }
      };
      let record = ended;
      // First: a dropped guess is set aside before anyone (its wave, a follow-up) counts it as undelivered.
      step('setting a dropped guess aside', () => (record = b.speculation.ended(job, ended)));
      step('ending its dedup entry', () => b.dedup.ended(record, job.dedupKey));
      step('delivering it to its parent job', () => b.nesting.deliverToParent(job, record));
      step('releasing its name', () => b.table.releaseName(job));
      step('keeping its spec for a restart', () => b.restarts.keep(job));
      step('ending its transcript', () => b.transcripts.ended(job.id));
      step('ending its span', () => b.traces.ended(record));
      step('dropping its approvals', () => b.approvals.ended(job.id));
      step('dropping its sleep', () => b.sleeps.ended(job.id));
      step('the done event', () => b.emit('done', record));
      if (record.wave !== null) step(`checking wave ${record.wave}`, () => b.checkWave(record.wave as number));
      step('launching the queue', () => b.dispatcher.pump());
    },
    reportFault: (what, error) => books().reportFault(what, error),
  };
}
