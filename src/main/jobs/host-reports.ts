import type { Logger } from 'pino';
import { errorMessage } from '../../shared/errors.js';
import type { StorageReport } from '../ledger/ledger-writes.js';
import type { Emit } from './manager-api.js';

/** An error in an event-loop path (no caller to throw to): logged, or a process warning without a logger. Never thrown. */
export function reportFault(logger: Logger | undefined, what: string, error: unknown, fields: Record<string, unknown> = {}): void {
  if (logger) logger.error({ ...fields, ...(error === undefined ? {} : { err: error }) }, what);
  else process.emitWarning(error === undefined ? what : `${what}: ${errorMessage(error)}`, { code: 'FORKPOOL_HOST_FAULT' });
}

/** The durable ledger's storage reports: a failure is logged once per degraded spell (then at debug), and its end too; each one is an event. */
export function reportStorage(logger: Logger | undefined, emit: Emit): (report: StorageReport) => void {
  return (report) => {
    if (report.kind === 'recovered') {
      logger?.warn({ failedWrites: report.failedWrites }, 'durable ledger: writes go through again; nothing is left unsaved');
      emit('ledger-recovered', { failedWrites: report.failedWrites });
      return;
    }
    const { kind: _kind, ...event } = report;
    const line = `durable ledger: a write failed (${report.operation}): ${report.error.message}; the process goes on, what it could not write is kept in memory and written again`;
    // Its own warning code: a disk that fails is the host's state, not a fault in forkpool (FORKPOOL_HOST_FAULT).
    if (report.first && logger) logger.error({ sqliteCode: report.sqliteCode, unsaved: report.unsaved }, line);
    else if (report.first) process.emitWarning(line, { code: 'FORKPOOL_LEDGER_DEGRADED' });
    else logger?.debug({ sqliteCode: report.sqliteCode, operation: report.operation, unsaved: report.unsaved }, 'durable ledger: another write failed');
    emit('ledger-error', event);
  };
}
