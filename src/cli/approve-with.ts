/**
 * `forkpool fanout --approve-with URL|command`: who answers a job's approval when no person is
 * present. A URL (http or https) gets a POST of the PendingApproval JSON and answers with an
 * ApprovalDecision JSON; a command gets the same JSON on its stdin and prints the decision on its
 * stdout. Whatever goes wrong — a refused connection, a non-2xx status, an exit code other than 0,
 * output that is no decision, no answer within the bound — is a deny whose reason says what
 * happened: the job's model reads it, and the fan-out goes on.
 */
import { spawn } from 'node:child_process';
import { z } from 'zod';
import { errorMessage } from '../shared/errors.js';
import { oneLine, preview } from '../main/views/terminal-lines.js';
import type { BackgroundManager } from '../main/jobs/manager.js';
import type { ForkpoolConfig } from '../shared/config.js';
import { approvalDecisionSchema, type ApprovalDecision, type PendingApproval } from '../shared/approvals.js';

export type Approver = { kind: 'url'; url: string } | { kind: 'command'; command: string };

/** The most of an approver's answer read (a decision is a few hundred bytes; the rest is cut off, and the answer refused). */
export const APPROVER_ANSWER_MAX_BYTES = 64 * 1024;

/** What an approver may answer: `by` is always `approve-with`, whatever it says. */
const decisionSchema = approvalDecisionSchema.omit({ by: true });

/** `--approve-with`'s value: an http(s) URL, or a command run by `/bin/sh -c`. Another scheme is refused (a typo, not a command). */
export function parseApprover(value: string): Approver | { problem: string } {
  const text = value.trim();
  if (!text) return { problem: '--approve-with expects an http(s) URL or a command; received an empty value' };
  const scheme = /^([a-z][a-z0-9+.-]*):\/\//i.exec(text)?.[1]?.toLowerCase();
  if (scheme === undefined) return { kind: 'command', command: text };
  if (scheme !== 'http' && scheme !== 'https') return { problem: `--approve-with expects an http(s) URL or a command; received a ${scheme}:// URL` };
  try {
    return { kind: 'url', url: new URL(text).href };
  } catch {
    return { problem: `--approve-with: not a valid URL: ${preview(text)}` };
  }
}

/** Asks the approver about one pending call; never rejects (a failure is a deny naming it). Gives up at `timeoutMs`. */
export async function askApprover(approver: Approver, pending: PendingApproval, timeoutMs: number): Promise<ApprovalDecision> {
  const deadline = AbortSignal.timeout(timeoutMs);
  const body = JSON.stringify(pending);
  let answer: { text: string } | { failure: string };
  try {
    answer = approver.kind === 'url' ? await postTo(approver.url, body, deadline) : await runCommand(approver.command, body, deadline);
  } catch (error) {
    answer = { failure: deadline.aborted ? `no answer within ${timeoutMs} ms` : oneLine(errorMessage(error), 300) };
  }
  if ('failure' in answer) return deny(approver, answer.failure);
  let raw: unknown;
  try {
    raw = JSON.parse(answer.text);
  } catch {
    return deny(approver, `its answer is not JSON: ${preview(answer.text)}`);
  }
  const parsed = decisionSchema.safeParse(raw);
  if (!parsed.success) return deny(approver, `its answer is no decision (${oneLine(z.prettifyError(parsed.error), 200)})`);
  const { decision, remember, reason } = parsed.data;
  return { decision, by: 'approve-with', ...(remember !== undefined ? { remember } : {}), ...(reason !== undefined ? { reason } : {}) };
}

function deny(approver: Approver, why: string): ApprovalDecision {
  const who = approver.kind === 'url' ? `the approver at ${approver.url}` : 'the approver command';
  return { decision: 'deny', by: 'approve-with', reason: `denied: ${who} gave no decision: ${why}` };
}

async function postTo(url: string, body: string, signal: AbortSignal): Promise<{ text: string } | { failure: string }> {
  // No redirects: the approval's arguments go to the URL given, nowhere else.
  const response = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body, signal, redirect: 'error' });
  const text = await readBounded(response);
  if (!response.ok) return { failure: `HTTP ${response.status}${text ? `: ${preview(text)}` : ''}` };
  return { text };
}

async function readBounded(response: Response): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of response.body ?? []) {
    chunks.push(Buffer.from(chunk as Uint8Array));
    size += (chunk as Uint8Array).byteLength;
    if (size > APPROVER_ANSWER_MAX_BYTES) break;
  }
  return Buffer.concat(chunks).subarray(0, APPROVER_ANSWER_MAX_BYTES).toString('utf8');
}

/** Runs the command with the pending approval on stdin; its stdout is the answer when it exits 0. Killed at the deadline. */
function runCommand(command: string, body: string, signal: AbortSignal): Promise<{ text: string } | { failure: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn('/bin/sh', ['-c', command], { stdio: ['pipe', 'pipe', 'pipe'], signal, killSignal: 'SIGKILL' });
    let out = '';
    let err = '';
    child.stdout.setEncoding('utf8').on('data', (text: string) => {
      if (out.length < APPROVER_ANSWER_MAX_BYTES) out += text;
    });
    child.stderr.setEncoding('utf8').on('data', (text: string) => {
      if (err.length < 2_000) err += text;
    });
    // A command that never reads its stdin closes the pipe: not a failure of its own.
    child.stdin.on('error', () => {});
    child.stdin.end(body);
    child.once('error', reject);
    child.once('close', (code, killedBy) => {
      if (code === 0) resolve({ text: out.slice(0, APPROVER_ANSWER_MAX_BYTES) });
      else resolve({ failure: `it exited with ${code === null ? `signal ${killedBy}` : `code ${code}`}${err.trim() ? `: ${preview(err.trim())}` : ''}` });
    });
  });
}

/**
 * Answers every approval the manager asks for through the approver, as it is asked (calls run
 * concurrently: one slow answer holds up no other job). An answer that comes too late (the call
 * timed out, the job ended) is said on stderr and changes nothing. Returns the unsubscribe.
 */
export function answerApprovals(
  manager: Pick<BackgroundManager, 'on' | 'approve'>,
  approver: Approver,
  timeoutMs: number,
  note: (line: string) => void,
): () => void {
  return manager.on('approval-requested', (pending) => {
    void askApprover(approver, pending, timeoutMs).then((decision) => {
      try {
        manager.approve(pending.jobId, pending.callId, decision);
      } catch (error) {
        note(
          `forkpool fanout: ${pending.jobId} ${oneLine(pending.tool, 60)}: the approver's ${decision.decision} came too late: ${oneLine(errorMessage(error), 200)}`,
        );
      }
    });
  });
}

/**
 * The config a fan-out runs with: no person is present, so every job denies an ungranted gated
 * call at once (an agent's own `ask` included: it would wait for nobody until the timeout),
 * unless an approver is given; then the config's approvals are `ask` (an agent's own setting stays).
 */
export function fanoutApprovals(config: ForkpoolConfig, approver: Approver | undefined): ForkpoolConfig {
  if (approver) return { ...config, approvals: 'ask' };
  const agents = Object.fromEntries(
    Object.entries(config.agents).map(([name, agent]) => [name, agent.approvals === 'ask' ? { ...agent, approvals: 'deny' as const } : agent]),
  );
  return { ...config, approvals: 'deny', agents };
}
