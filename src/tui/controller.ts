/**
 * The chat's state and rules, apart from any rendering: the transcript, whether the model is
 * busy, Enter/Ctrl+Enter while busy, cancel, quit, the permission question and the panel; the
 * person's own jobs and the question which agent they run as in user-jobs.ts. The ink app and
 * the plain line mode both drive it; tests drive it directly.
 */
import type { AgentSession } from '../main/session/agent-session.js';
import { retryLine } from '../shared/model-errors.js';
import type { CloseReport } from '../main/jobs/manager-api.js';
import type { JobRecord } from '../main/ledger/ledger.js';
import { TypedEmitter } from '../shared/typed-emitter.js';
import type { PermissionRequest } from '../shared/tools/types.js';
import { errorMessage } from '../shared/errors.js';
import { escapeForTerminal, oneLine } from '../main/views/terminal-lines.js';
import { runSlashCommand } from './commands.js';
import { followUpNotice } from '../main/views/follow-up.js';
import type { StartOptions } from './start-command.js';
import { UserJobs } from './user-jobs.js';
import { ChatWaits } from './chat-waits.js';
import { approvalRequestedLine, approvalResolvedLine } from './approve-command.js';
import { jobColorState, type JobColorState } from './state-colors.js';
import { PermissionQuestion, type PermissionAnswer } from './permission-question.js';
import { answerText, cancelledTurnNotice, deliveredLine, doneLine, spawnedLine, toolLine, type EntryKind, type TranscriptEntry } from './transcript.js';

export type { PermissionAnswer } from './permission-question.js';

export interface ChatControllerOptions {
  session: AgentSession;
  /** How long quit waits for jobs to stop before hard-stopping their threads. */
  closeTimeoutMs: number;
  now?: () => number;
  /** `forkpool chat --agent NAME` (a configured agent): what the person's own jobs run as. */
  userAgent?: string | undefined;
  /** On a terminal: without `userAgent` or `background.defaultAgent`, ask once which agent (agent-choice.ts). */
  askAgent?: boolean;
}

export interface PanelState {
  open: boolean;
  /** Index into the panel's rows (tree order). */
  selected: number;
  /** The job whose detail is shown, if any; `detailOffset` scrolls it. */
  detail?: string;
  detailOffset: number;
}

export type ChatEvents = {
  /** A final transcript line. */
  entry: [TranscriptEntry];
  /** Live state changed (busy, jobs, hint, panel, permission): redraw. */
  change: [];
};

/** Kept so up/down can recall earlier inputs; older ones are forgotten. */
const HISTORY_MAX = 200;

export const BUSY_HINT =
  'the model is busy: Ctrl+Enter (or Ctrl+J) starts this as a background job now; Enter sends it once the turn ends; Esc cancels the turn';

export class ChatController extends TypedEmitter<ChatEvents> {
  readonly session: AgentSession;
  readonly entries: TranscriptEntry[] = [];
  readonly history: string[] = [];
  readonly #closeTimeoutMs: number;
  readonly now: () => number;
  #nextId = 1;
  /** The parent turn that runs now, or 0 between a submit and its turn's start. */
  #turn: number | undefined;
  #activity: string | undefined;
  #hint: string | undefined;
  #alertsWaiting = 0;
  readonly #permission = new PermissionQuestion(
    (text) => this.add('notice', text),
    () => this.changed(),
  );
  #panel: PanelState = { open: false, selected: 0, detailOffset: 0 };
  #closing: Promise<CloseReport> | undefined;
  /** The `/bg wait`s that run now: Esc (cancelTurn) and quit abort them. */
  readonly #waits = new ChatWaits(() => this.changed());
  /** The person's own jobs, and the question which agent they run as. */
  readonly #userJobs: UserJobs;

  constructor(options: ChatControllerOptions) {
    super();
    this.session = options.session;
    this.#closeTimeoutMs = options.closeTimeoutMs;
    this.now = options.now ?? Date.now;
    const { session } = options;
    const { config } = session.agent;
    this.#userJobs = new UserJobs({
      session,
      choice: {
        agents: Object.keys(config.agents),
        flag: options.userAgent,
        configured: config.background.defaultAgent,
        canAsk: options.askAgent ?? false,
      },
      say: (kind, text) => this.add(kind, text),
      changed: () => this.changed(),
    });
    session.on('parent', (event) => {
      if (event.type === 'turn_start') {
        this.#turn = event.turn;
        // The turn's preamble takes every alert that was waiting.
        this.#alertsWaiting = 0;
        this.#activity = 'thinking';
        // forkpool's own turn: one line says why, never its input (the delivered block).
        if (event.followUp) this.add('notice', followUpNotice(event.turn, event.cause));
      } else if (event.type === 'loop') {
        const e = event.event;
        if (e.type === 'tool_call') {
          this.#activity = `running ${e.name}`;
          this.add('tool', toolLine(e.name, e.argsPreview, e.background === true));
        } else if (e.type === 'model_request') this.#activity = 'thinking';
        else if (e.type === 'retry') {
          // A line in the transcript too: a rate limit's wait can be long, and must not look like a hang.
          this.#activity = `retrying (${oneLine(e.reason, 60)})`;
          this.add('notice', `↻ ${retryLine(e)}`);
        }
      }
      this.changed();
    });
    session.on('turn-result', (result) => {
      // A cancelled turn's text is only the loop's partial findings: the person asked it to stop.
      if (result.answer.trim() && result.stopReason !== 'aborted') this.add('answer', answerText(result.answer));
      if (result.stopReason === 'aborted') {
        this.add('notice', cancelledTurnNotice(result.turn, result.cancelledJobs, this.session.manager.jobs()));
      } else if (result.error) {
        this.add('error', `turn ${result.turn} ended with ${result.stopReason}: ${oneLine(result.error.message, 300)}`);
      }
      this.#turn = undefined;
      this.#activity = undefined;
      // The model is free: "the model is busy" is no longer true (the person's text is still in the input).
      if (this.#hint === BUSY_HINT) this.#hint = undefined;
      this.changed();
    });
    session.on('delivered', ({ turn, jobs }) => this.add('delivered', deliveredLine(turn, jobs.length)));
    session.on('alert', (alert) => {
      this.#alertsWaiting++;
      this.add('alert', `⚠ ${alert.jobId} "${oneLine(alert.label, 40)}" alert (${alert.severity}): ${oneLine(alert.message, 200)}`);
    });
    const { manager } = session;
    manager.on('spawned', (job) => this.add('job', spawnedLine(job), jobColorState(job)));
    manager.on('done', (job) => this.add('job', doneLine(job), jobColorState(job)));
    manager.on('backgrounded', (job) =>
      this.add('notice', `↷ ${job.id} [${escapeForTerminal(job.agent ?? '?')}] backgrounded: the call returned early, the job goes on`),
    );
    // A job's question, and its answer whoever gave it; the prompt above the input lists what still waits (app.ts).
    manager.on('approval-requested', (pending) => this.add('alert', approvalRequestedLine(pending)));
    manager.on('approval-resolved', (record) => this.add('notice', approvalResolvedLine(record)));
    manager.on('started', () => this.changed());
    manager.on('requeued', () => this.changed());
    manager.on('progress', ({ event }) => {
      if (event.type === 'tool_call') this.changed();
    });
  }

  /** A turn runs (or was sent and is about to start). */
  get busy(): boolean {
    return this.#turn !== undefined;
  }

  get turn(): number | undefined {
    return this.#turn || undefined;
  }

  get activity(): string | undefined {
    return this.#activity;
  }

  get hint(): string | undefined {
    return this.#hint;
  }

  get alertsWaiting(): number {
    return this.#alertsWaiting;
  }

  get permission(): PermissionRequest | undefined {
    return this.#permission.request;
  }

  get panel(): Readonly<PanelState> {
    return this.#panel;
  }

  /** The one question "which agent do your jobs run as", while it waits for an answer. */
  get agentQuestion(): string | undefined {
    return this.#userJobs.question;
  }

  get closing(): boolean {
    return this.#closing !== undefined;
  }

  /** A `/bg wait` runs (Esc stops it). */
  get waiting(): boolean {
    return this.#waits.any;
  }

  /** For `/bg wait` (commands.ts): its signal, aborted by Esc or quit, and its end. */
  beginWait(): { signal: AbortSignal; done(): void } {
    return this.#waits.begin();
  }

  jobs(): Readonly<JobRecord>[] {
    return this.session.manager.jobs();
  }

  liveJobs(): number {
    return this.session.manager.count('running') + this.session.manager.count('queued');
  }

  /** `jobState`: a job's line, coloured by its state (state-colors.ts). */
  add(kind: EntryKind, text: string, jobState?: JobColorState): void {
    const entry: TranscriptEntry = { id: this.#nextId++, kind, text, ...(jobState ? { jobState } : {}) };
    this.entries.push(entry);
    this.emit('entry', entry);
    this.changed();
  }

  changed(): void {
    this.emit('change');
  }

  setHint(hint: string | undefined): void {
    if (hint === this.#hint) return;
    this.#hint = hint;
    this.changed();
  }

  /** The input line changed: emptied, the busy hint goes with the text it was about. */
  inputChanged(text: string): void {
    if (text.trim() === '' && this.#hint === BUSY_HINT) this.setHint(undefined);
  }

  /**
   * Enter: a `/command` runs at once (busy or not); a prompt starts a turn when the model is
   * idle. While it is busy the prompt is not sent and nothing is spawned: a hint says how
   * (returns false: the caller keeps the text in the input).
   */
  submitLine(text: string): { accepted: boolean; turn?: Promise<void> } {
    const line = text.trim();
    if (!line) return { accepted: true };
    if (line.startsWith('/')) {
      this.remember(line);
      this.setHint(undefined);
      // A `/bg wait` goes on after the command returns: its end is this line's "turn" (line mode waits for it).
      const waiting = this.#waits.during(() => runSlashCommand(this, line));
      return waiting ? { accepted: true, turn: waiting } : { accepted: true };
    }
    if (this.busy || this.closing) {
      this.setHint(this.closing ? 'closing: no new turns' : BUSY_HINT);
      return { accepted: false };
    }
    this.remember(line);
    this.setHint(undefined);
    return { accepted: true, turn: this.startTurn(line) };
  }

  /** Ctrl+Enter / Ctrl+J: while busy, a user job from the text; when idle, the same as Enter. */
  spawnFromInput(text: string): { accepted: boolean; turn?: Promise<void> } {
    const task = text.trim();
    if (!task) {
      this.setHint('type a task first: Ctrl+Enter (or Ctrl+J) starts it as a background job');
      return { accepted: false };
    }
    if (!this.busy || task.startsWith('/')) return this.submitLine(text);
    this.remember(task);
    this.setHint(undefined);
    this.startUserJob(task);
    return { accepted: true };
  }

  /** What `/bg start` and Ctrl+Enter run as now (`--agent`, the question's answer, `background.defaultAgent`): see AgentChoice.current. */
  userAgent(): string | null | undefined {
    return this.#userJobs.agent;
  }

  /** `/bg start` and Ctrl+Enter: role `user`, its own usage bucket, not wave-gated (user-jobs.ts). */
  startUserJob(task: string, options: StartOptions = {}): void {
    this.#userJobs.start(task, options);
  }

  /** The agent question's answer: a digit, or `undefined` (Esc); see UserJobs.answer. */
  answerAgent(digit: number | undefined): void {
    this.#userJobs.answer(digit);
  }

  /** Esc, or Ctrl+C while busy: ends the current turn and stops any `/bg wait`. Background jobs are left running. */
  cancelTurn(): boolean {
    this.#permission.answer('deny');
    const stoppedWait = this.#waits.stop('cancelled by the user');
    const cancelled = this.session.cancelTurn();
    if (cancelled) this.#activity = 'cancelling';
    this.changed();
    return cancelled || stoppedWait;
  }

  /** Ctrl+C: cancels the turn (or a `/bg wait`) when one runs, else quits. */
  interrupt(): 'cancelled' | 'quitting' {
    if ((this.busy || this.waiting) && this.cancelTurn()) return 'cancelled';
    void this.quit();
    return 'quitting';
  }

  /**
   * Closes the session within its bound: queued jobs are cancelled, running ones asked to stop,
   * stragglers hard-stopped with their threads. Says what happened. Every call shares one close.
   */
  quit(): Promise<CloseReport> {
    if (this.#closing) return this.#closing;
    this.#permission.answer('deny');
    this.#waits.stop('closing', true);
    this.#userJobs.dropQuestion();
    const live = this.liveJobs();
    this.add(
      'notice',
      live > 0 ? `closing: stopping ${live} background job${live === 1 ? '' : 's'} (at most ${(this.#closeTimeoutMs / 1000).toFixed(0)}s)…` : 'closing…',
    );
    this.#closing = this.session.close({ timeoutMs: this.#closeTimeoutMs }).then((report) => {
      const stragglers = report.stragglers.length > 0 ? `; hard-stopped (did not stop in time): ${report.stragglers.join(', ')}` : '';
      this.add('notice', `closed: ${report.cancelled.length} job${report.cancelled.length === 1 ? '' : 's'} cancelled${stragglers}`);
      return report;
    });
    this.changed();
    return this.#closing;
  }

  /** The parent's permission asker: shows the question and waits for {@link answerPermission}. */
  askPermission(request: PermissionRequest): Promise<PermissionAnswer> {
    return this.#closing ? Promise.resolve('deny') : this.#permission.ask(request);
  }

  answerPermission(answer: PermissionAnswer): void {
    this.#permission.answer(answer);
  }

  togglePanel(): void {
    this.#panel = { ...this.#panel, open: !this.#panel.open, detailOffset: 0 };
    delete this.#panel.detail;
    this.changed();
  }

  movePanel(delta: number, rows: number): void {
    if (this.#panel.detail !== undefined) {
      this.#panel = { ...this.#panel, detailOffset: Math.max(0, this.#panel.detailOffset + delta) };
    } else {
      this.#panel = { ...this.#panel, selected: Math.min(Math.max(0, rows - 1), Math.max(0, this.#panel.selected + delta)) };
    }
    this.changed();
  }

  showDetail(jobId: string | undefined): void {
    this.#panel = { ...this.#panel, open: true, detailOffset: 0 };
    if (jobId === undefined) delete this.#panel.detail;
    else this.#panel.detail = jobId;
    this.changed();
  }

  /** Up/down in the input: the earlier input `back` steps ago (1 = the last), or '' past the newest. */
  recall(back: number): string {
    return back <= 0 ? '' : (this.history[this.history.length - back] ?? this.history[0] ?? '');
  }

  remember(line: string): void {
    if (this.history.at(-1) !== line) this.history.push(line);
    if (this.history.length > HISTORY_MAX) this.history.shift();
  }

  private startTurn(line: string): Promise<void> {
    this.add('user', `› ${oneLine(line, 2_000)}`);
    this.#turn = 0;
    this.#activity = 'waiting for the model';
    this.changed();
    return this.session.submit(line).then(
      () => {},
      (error: unknown) => {
        this.#turn = undefined;
        this.#activity = undefined;
        this.add('error', `the turn did not run: ${oneLine(errorMessage(error), 300)}`);
      },
    );
  }
}
