import type { MessagePort } from 'node:worker_threads';
import type { Remote } from 'comlink';
import { AbortError } from '../shared/errors.js';
import type { AdmissionGate, GateTicket, RequestOutcome } from '../shared/model-call.js';

/** The main thread's side, as a job sees it over comlink (see src/main/request-gate.ts). */
export interface RemoteGateService {
  admitRequest(ticket: number): Promise<void>;
  settleRequest(ticket: number, outcome: RequestOutcome): void;
}

/**
 * A job's model requests under adaptive concurrency: each one waits for a slot from its
 * endpoint's gate on the main thread, and gives it back with its outcome. Tickets are numbered
 * here, so a request given up while still waiting can be withdrawn by its number.
 */
export class RemoteRateGate implements AdmissionGate {
  readonly #remote: Remote<RemoteGateService>;
  readonly #port: MessagePort;
  #next = 1;

  constructor(remote: Remote<RemoteGateService>, port: MessagePort) {
    this.#remote = remote;
    this.#port = port;
  }

  async admit(signal: AbortSignal): Promise<GateTicket> {
    if (signal.aborted) throw new AbortError(signal.reason);
    const ticket = this.#next++;
    const settle = (outcome: RequestOutcome) => {
      // Fire and forget: the answer carries nothing, and a closed port never answers.
      Promise.resolve(this.#remote.settleRequest(ticket, outcome)).catch(() => {});
    };
    let cleanup = () => {};
    // A closed port (the main thread ended this job) or an abort ends the wait; a comlink call
    // pending on a closed port would otherwise hang forever.
    const stopped = new Promise<'closed' | 'aborted'>((resolve) => {
      const onClose = () => resolve('closed');
      const onAbort = () => resolve('aborted');
      this.#port.once('close', onClose);
      signal.addEventListener('abort', onAbort, { once: true });
      cleanup = () => {
        this.#port.off('close', onClose);
        signal.removeEventListener('abort', onAbort);
      };
    });
    try {
      const how = await Promise.race([Promise.resolve(this.#remote.admitRequest(ticket)).then(() => 'admitted' as const), stopped]);
      if (how === 'aborted') {
        settle({ kind: 'abandoned' });
        throw new AbortError(signal.reason);
      }
    } finally {
      cleanup();
    }
    return { settle };
  }
}
