/**
 * Entry of one bench cell's process (forked by run.ts with an IPC channel): receives a
 * {@link CellSpec}, runs it, sends back a {@link CellMessage}, exits. A fresh process per cell
 * keeps peak RSS, JIT warmth and leftover sockets of one cell out of the next.
 */
import { runCell } from './cell.js';
import type { CellMessage, CellSpec } from './types.js';

const send = (message: CellMessage) =>
  new Promise<void>((resolve) => {
    if (!process.send) return resolve();
    process.send(message, undefined, {}, () => resolve());
  });

process.once('message', (spec: CellSpec) => {
  void runCell(spec)
    .then(
      (result) => send({ type: 'result', result }),
      (error: unknown) => send({ type: 'error', message: error instanceof Error ? (error.stack ?? error.message) : String(error) }),
    )
    // Whatever threads or sockets are left, the cell is over.
    .finally(() => process.exit(0));
});
// The parent went away: nothing to report to.
process.once('disconnect', () => process.exit(1));
