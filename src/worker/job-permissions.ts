import { ToolError } from '../shared/errors.js';
import { ApprovalPending } from '../shared/approvals.js';
import type { AwaitedCall } from '../shared/protocol.js';
import type { PermissionGate, PermissionRequest } from '../shared/tools/types.js';

// A job's permission checks over its port (job.ts wires them): the questions in flight, and the
// gate that turns the main thread's answer into granted, a tool error, or a pause for approval.

/** The main thread's answer to a gated call: granted, denied (with someone's reason), or `ask` (it waits for an approval). */
interface PermissionAnswer {
  granted: boolean;
  ask?: true;
  reason?: string;
}

export const DENIED: PermissionAnswer = { granted: false };

/**
 * A job's gate over the main thread's answers. `ask` pauses the call: the gate throws
 * {@link ApprovalPending} (the loop ends the batch and pauses) and keeps what the call was, for
 * the `await-approval` message. A deny someone gave is a tool error with their reason.
 */
export function approvalGate(ask: (request: PermissionRequest) => Promise<PermissionAnswer>, awaited: Map<string, AwaitedCall>): PermissionGate {
  return {
    check: async (request) => {
      const answer = await ask(request);
      if (answer.ask && request.callId !== undefined) {
        awaited.set(request.callId, { callId: request.callId, tool: request.tool, summary: request.summary, args: request.args ?? '' });
        throw new ApprovalPending(request.tool, request.callId);
      }
      if (!answer.granted && answer.reason !== undefined) {
        throw new ToolError('PERMISSION_DENIED', request.tool, `permission denied: "${request.tool}" (${request.summary}) was not approved: ${answer.reason}`);
      }
      return answer.granted;
    },
  };
}

/** A job's permission questions in flight, by request id; each resolves once, with its answer. */
export class PermissionQuestions {
  readonly #send: (requestId: number, tool: string, callId: string | undefined) => void;
  /** Made on the first question: most jobs never ask one. */
  #pending: Map<number, (answer: PermissionAnswer) => void> | undefined;
  #last = 0;

  constructor(send: (requestId: number, tool: string, callId: string | undefined) => void) {
    this.#send = send;
  }

  ask(tool: string, callId: string | undefined): Promise<PermissionAnswer> {
    const requestId = ++this.#last;
    return new Promise((resolve) => {
      (this.#pending ??= new Map()).set(requestId, resolve);
      this.#send(requestId, tool, callId);
    });
  }

  answer(requestId: number, answer: { granted: boolean; ask?: true | undefined; reason?: string | undefined }): void {
    const { granted, ask, reason } = answer;
    this.#pending?.get(requestId)?.({ granted, ...(ask ? { ask } : {}), ...(reason !== undefined ? { reason } : {}) });
    this.#pending?.delete(requestId);
  }
}
