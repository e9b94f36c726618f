/**
 * File descriptors run out under a large fan-out: every job in flight holds a socket, and each
 * search holds a folder per level it walks. An `open` that fails with EMFILE (this process) or
 * ENFILE (the system) is not "file unreadable": another job will close a descriptor within
 * milliseconds. So opening waits and tries again, and when the limit persists the tool fails
 * saying so; a search never skips a folder for it and answers "no matches" (it once did).
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { AbortError, ToolError } from '../errors.js';
import { codeOf } from './sandbox.js';
import type { ToolContext } from './types.js';
import { threadBacklog } from '../thread-backlog.js';
import { WaitQueue } from '../wait-queue.js';

/** Waits between tries (ms, before jitter): about 3.3 s in all. */
const RETRY_DELAYS_MS = [5, 10, 20, 40, 80, 160, 320, 640, 1_000, 1_000];

export function isFdLimit(error: unknown): boolean {
  const code = codeOf(error);
  return code === 'EMFILE' || code === 'ENFILE';
}

/** Runs `open` (anything that takes a descriptor), retrying while descriptors have run out. */
export async function withFdRetry<T>(open: () => Promise<T>, signal?: AbortSignal): Promise<T> {
  for (let attempt = 0; ; attempt++) {
    try {
      return await open();
    } catch (error) {
      const wait = RETRY_DELAYS_MS[attempt];
      if (!isFdLimit(error) || wait === undefined || signal?.aborted) throw error;
      // Jitter: jobs that failed together should not all retry in the same millisecond.
      await sleep(wait + Math.random() * wait, undefined, signal ? { signal } : undefined);
    }
  }
}

/** The tool error for a limit that outlasted the retries: what happened and what to do. */
export function fdLimitError(toolName: string, shown: string, error: unknown): ToolError {
  return new ToolError(
    'TOOL_FAILED',
    toolName,
    `cannot open ${shown}: too many files open in this process (${codeOf(error)}), still after retrying for 3 s or more; other jobs hold them. Try again shortly, or run fewer jobs at once`,
    { cause: error },
  );
}

/**
 * Searches running at once on this thread. A search holds a descriptor per folder level it is in
 * plus the file it reads; thousands of them at once (shared isolation, many jobs per thread)
 * could each take a few and all wait for more (every one of 5,000 greps failed that way at the
 * limit). A bounded number run; the others wait here, holding nothing.
 */
const MAX_SEARCHES_PER_THREAD = 256;
let searchesRunning = 0;
const searchesWaiting = new WaitQueue<SearchWaiter>();

interface SearchWaiter {
  cancelled: boolean;
  admit(): void;
}

/**
 * Runs `search` when fewer than {@link MAX_SEARCHES_PER_THREAD} run; an abort while waiting
 * throws. The wait is outside the tool's timeout (`ctx.untimedWait`): with 10,000 jobs in
 * flight on one thread, a search queued behind 20,000 others waited over a minute and timed out
 * before it began (inline lost 791 jobs so). The search itself keeps its time limit and timeout.
 * Its waiters count in the thread's backlog, which new jobs wait on to start (thread-backlog.ts).
 */
export async function withSearchSlot<T>(ctx: Pick<ToolContext, 'signal' | 'untimedWait'>, search: () => Promise<T>): Promise<T> {
  const { signal } = ctx;
  const waitTurn = () =>
    new Promise<void>((resolve, reject) => {
      if (signal.aborted) return reject(new AbortError(signal.reason));
      const waiter: SearchWaiter = {
        cancelled: false,
        admit: () => {
          signal.removeEventListener('abort', onAbort);
          threadBacklog.queueLeft();
          resolve();
        },
      };
      // Left in the queue, marked: the next hand-over skips it.
      const onAbort = () => {
        waiter.cancelled = true;
        threadBacklog.queueLeft();
        reject(new AbortError(signal.reason));
      };
      signal.addEventListener('abort', onAbort, { once: true });
      threadBacklog.queueJoined();
      searchesWaiting.push(waiter);
    });
  if (searchesRunning >= MAX_SEARCHES_PER_THREAD) await (ctx.untimedWait ? ctx.untimedWait(waitTurn) : waitTurn());
  else searchesRunning++;
  try {
    return await search();
  } finally {
    // Hand the slot straight to the next waiter (the count stays), or give it back.
    const next = searchesWaiting.next();
    if (next) next.admit();
    else searchesRunning--;
  }
}
