import { ForkpoolError } from '../../shared/errors.js';
import type { ApprovalRecord, PendingApproval } from '../../shared/approvals.js';
import type { ApprovalWait, JobRecord, SleepWait } from './job-record.js';
import type { RecordTable } from './record-table.js';
import {
  approvalAnsweredRecord,
  asleepRecord,
  awaitingApprovalRecord,
  handedResultsRecord,
  heldResultsRecord,
  restartedWaitRecord,
  waitingForChildrenRecord,
} from './wait-records.js';

/**
 * A job's pauses in the ledger (`ledger.waits`): waiting for its children, for approvals or
 * asleep, and the children's results handed to its next run or held meanwhile. Each checks the
 * transition and writes the next record (its value from wait-records.ts) through the
 * {@link DeliveryLedger}'s table, as the ledger's own transitions do.
 */
export class LedgerWaits {
  readonly #table: RecordTable;

  constructor(table: RecordTable) {
    this.#table = table;
  }

  /** It answered with children running: back to `queued`, its slot given back, until they end. */
  suspend(id: string): Readonly<JobRecord> {
    return this.#table.replace(id, waitingForChildrenRecord(this.#table.expect(id, 'running', 'queued').record));
  }

  /** A running job paused: these calls wait for approvals (its thread and slot are given back; it stays `running`). */
  awaitApproval(id: string, pending: readonly PendingApproval[], wait: ApprovalWait): Readonly<JobRecord> {
    return this.#table.replace(id, awaitingApprovalRecord(this.#table.expect(id, 'running', 'running').record, pending, wait));
  }

  /** One of its calls was answered: kept in its history; `wait` is what its next launch goes on with. */
  answerApproval(id: string, answered: ApprovalRecord, pending: readonly PendingApproval[], wait: ApprovalWait): Readonly<JobRecord> {
    return this.#table.replace(id, approvalAnsweredRecord(this.#table.expect(id, 'running', 'running').record, answered, pending, wait));
  }

  /** Every call answered: back to `queued` to take a slot again; it keeps its first start time (markRunning). */
  approvalsAnswered(id: string): Readonly<JobRecord> {
    const { record } = this.#table.expect(id, 'running', 'queued');
    return this.#table.replace(id, { ...record, state: 'queued' });
  }

  /** A running job sleeps until `wait.at` (`sleep` scheduler): its thread and slot are given back; it stays `running`. */
  sleep(id: string, wait: SleepWait): Readonly<JobRecord> {
    return this.#table.replace(id, asleepRecord(this.#table.expect(id, 'running', 'running').record, wait));
  }

  /** Its time came: back to `queued` to take a slot again, its `sleepWait` kept until it runs (markRunning). */
  woke(id: string): Readonly<JobRecord> {
    const { record } = this.#table.expect(id, 'running', 'queued');
    return this.#table.replace(id, { ...record, state: 'queued' });
  }

  /**
   * Restarted while it waited (restarts.ts): back to `queued` to run from its start, its wait
   * gone, in one write; `refused`, its pending calls answered as void, join its approval history.
   */
  restart(id: string, note: string, refused: readonly ApprovalRecord[]): Readonly<JobRecord> {
    const record = this.#table.get(id)?.record;
    if (!record || !(record.waitingForChildren || record.approvalWait || record.sleepWait))
      throw new ForkpoolError('INTERNAL', `ledger: job ${id} is ${record?.state ?? 'unknown'} and waits for nothing: no wait to restart from`);
    return this.#table.replace(id, restartedWaitRecord(record, note, refused));
  }

  /** Children's results handed to its next run (see {@link JobRecord.handedResults}): all it carries, not only the new ones. */
  handResults(id: string, texts: readonly string[]): void {
    const record = this.#table.get(id)?.record;
    if (!record || record.state === 'ended') return;
    this.#table.replace(id, handedResultsRecord(record, texts), 'lenient');
  }

  /**
   * Children's results held for a job with no run now (asleep, or paused for approvals): kept on
   * its wait record, so a restart hands them to its next run (nesting.ts). Lenient, as every
   * hand-over to a parent: the result goes on in this process whatever the disk says.
   */
  holdChildResults(id: string, texts: readonly string[]): void {
    const record = this.#table.get(id)?.record;
    const held = record && heldResultsRecord(record, texts);
    if (held) this.#table.replace(id, held, 'lenient');
  }
}
