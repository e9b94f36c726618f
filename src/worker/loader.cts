/**
 * The file Piscina loads in each worker thread — CommonJS on purpose. Piscina loads its worker
 * file with require() first, and on Node 20.19+ require() of an ES module takes a path that
 * aborts the whole process with a native assertion (CreateRequiredModuleFacade) when the thread
 * is terminated while the module loads: a hard stop or close() racing a thread start. Seen in
 * our test runs. A CommonJS file never takes that path; the ES module entry named in
 * `workerData.forkpoolEntry` is then loaded with import(), which a termination only interrupts.
 */
// eslint-disable-next-line @typescript-eslint/no-require-imports -- a CommonJS file on purpose (above): TypeScript's typed require
import workerThreads = require('node:worker_threads');
// eslint-disable-next-line @typescript-eslint/no-require-imports -- as above
import threadLink = require('./thread-link.cjs');
// eslint-disable-next-line @typescript-eslint/no-require-imports -- as above
import resolveConfigRef = require('./config-ref.cjs');

type TaskFunction = (task: unknown) => unknown;

const data = workerThreads.workerData as { forkpoolEntry?: string; forkpoolLink?: string } | undefined;
const target: string = data?.forkpoolEntry ?? './entry.js';
let entry: Promise<TaskFunction> | undefined;

function runTask(task: unknown): Promise<unknown> {
  // In shared isolation the executor finds a job's thread by the id written here, before any
  // entry code runs (custom worker files included), so a hard stop always finds it.
  const slot = (task as { threadSlot?: unknown } | null)?.threadSlot;
  if (slot instanceof Int32Array) Atomics.store(slot, 0, workerThreads.threadId);
  // A config sent by reference is put back in the spec before any entry code sees it (config-ref.cts).
  resolveConfigRef(task);
  entry ??= import(target).then((module: { default: TaskFunction }) => module.default);
  // A task sent without a port gets its end of this thread's link (the pool's ThreadLinks),
  // before the entry's code runs: custom worker files see a port either way.
  const linkId = (task as { linkId?: unknown } | null)?.linkId;
  const port = typeof linkId === 'number' && data?.forkpoolLink ? threadLink.openEndpoint(data.forkpoolLink, linkId) : undefined;
  const ready = port
    ? Promise.all([entry, port]).then(([run, linked]) => run(Object.assign(task as object, { port: linked })))
    : entry.then((run) => run(task));
  // A throw from the task function is handed back as a value: the main thread then knows the
  // thread is alive, without guessing from an error's message (see TaskFailure in executor.ts).
  return ready.catch((error: unknown) => ({ forkpoolTaskFailed: error }));
}

export = runTask;
