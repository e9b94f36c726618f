import { threadId } from 'node:worker_threads';
import type { ScheduledTurn } from '../shared/scheduler.js';
import { TIMINGS } from '../shared/defaults.js';
import { AbortError, ForkpoolError, serializeError } from '../shared/errors.js';
import { createModelClient, type ModelClient, type RateGate } from '../shared/model-call.js';
import { backgroundSystemPrompt, orientationMessage } from '../shared/prompts.js';
import { HELD_RESULTS_ID, mainMessageSchema, type JobOutcome, type JobSpec, type JobTask, type StopRequest, type WorkerMessage } from '../shared/protocol.js';
import { SharedRateGate } from '../shared/rate-gate.js';
import { runToolLoop } from '../shared/tool-loop.js';
import type { LoopEvent } from '../shared/loop-events.js';
import { HostToolLink, jobToolHooks, offeredTools } from './host-tools.js';
import { subagentStart, subagentStop } from './job-hooks.js';
import { FileReadLog } from '../shared/tools/file-reads.js';
import { resolveWorkspaceRoot } from '../shared/tools/sandbox.js';
import { checkedSpec, jobEnv, policyFor, secretsFor, sharedText } from './thread-shared.js';
import type { PermissionGate, ProcessRegistry, ToolDefinition } from '../shared/tools/types.js';
import { agentSystemPrompt, configForAgent } from '../shared/agents.js';
import { applySpawnSpec, spawnSystemPrompt } from '../shared/spawn-spec.js';
import { canSpawn, jobToolsFor } from './job-tools.js';
import { ChildLink, earlierRunResults } from './children.js';
import { SteeringInbox, joinInjections } from './steering.js';
import { typedOutputFor } from './typed-output.js';
import { SUBMIT_RESULT_TOOL } from '../shared/output-schema.js';
import { RemoteRateGate, answerOrFallback } from './remote-gate.js';
import { mergeUsageByModel, type UsageByModel } from '../shared/usage.js';
import type { ChatCompletionMessageParam } from 'openai/resources/chat/completions';
import { BudgetMeter } from '../shared/budget.js';
import { capConversation } from '../shared/conversation-cap.js';
import type { AwaitedCall } from '../shared/protocol.js';
import { postEnding, type JobRunResult } from './job-ending.js';
import { enterThread, waitToStart, type JobLane } from './job-entry.js';
import { DENIED, PermissionQuestions, approvalGate } from './job-permissions.js';

export interface BackgroundJobDeps {
  signal: AbortSignal;
  permissions: PermissionGate;
  onEvent?: (event: LoopEvent) => void;
  /** Child process groups the tools start, reported to the main thread (see ProcessRegistry). */
  processes?: ProcessRegistry;
  rateGate?: RateGate | undefined;
  client?: ModelClient;
  /** Tools that talk to the main thread (report_alert, the spawn tools below the depth limit). */
  jobTools?: ToolDefinition[];
  /** Its children (a job below the depth limit): their results go before its next model call. */
  children?: ChildLink;
  /** Messages sent to it (send_to_background_agent): before its next model call; an interrupt cancels the call in flight. */
  steering?: SteeringInbox;
  /** Its calls of main-thread tools (host, MCP): over its port. */
  hostTools?: HostToolLink;
  /** The calls its gate paused for approvals, by call id (see {@link approvalGate}). */
  awaited?: Map<string, AwaitedCall>;
  /** Its way to the thread's model connections, when it already waited for its turn (job-entry.ts). */
  lane?: JobLane;
  /** The turn its schedule_next_turn asked for, set by that tool (scheduler.ts): `exit_on_defer` ends deferred, `sleep` ends its run asleep. */
  deferral?: { turn?: ScheduledTurn };
}

/**
 * Runs one background job's tool loop: the background system prompt, the built-in tools only
 * (no spawn, cancel or agent tools: depth 1), its own client from the cloned config.
 * Never throws for a job-level failure; the outcome says how it ended.
 */
export async function runBackgroundJob(spec: JobSpec, deps: BackgroundJobDeps): Promise<JobRunResult> {
  let usage: UsageByModel = spec.resume?.usage ?? {};
  let iterations = spec.resume?.iterations ?? 0;
  // What it read, for the stale check at delivery (sent with its result; see FileRead).
  const reads = new FileReadLog();
  const withReads = <T extends JobOutcome>(outcome: T): T => {
    const entries = reads.entries();
    return entries.length > 0 ? { ...outcome, reads: entries } : outcome;
  };
  let lane: JobLane | undefined;
  try {
    // A peer job runs its agent's model, endpoint, tools, limits and prompt; all from the spec.
    // Then its spawn's own model and tool subset (checked on the main thread at admission).
    const config = applySpawnSpec(configForAgent(spec.config, spec.agent), spec);
    // Every job on this thread shares these: sockets stay bounded whatever the jobs in flight.
    // It builds its loop once its first model call would not wait behind a full queue (see ConnectionSlots.enter).
    lane = deps.lane ?? (await enterThread(config, deps.signal));
    const workspaceRoot = await resolveWorkspaceRoot(config.workspaceRoot, { allowBroad: config.allowBroadWorkspace });
    const baseline = sharedText(backgroundSystemPrompt({ workspaceRoot }));
    const children = deps.children;
    const steering = deps.steering;
    const processTag = spec.processTag;
    let env: Readonly<Record<string, string>> | undefined;
    // One meter for the whole job: it counts what was spent before a resume, and warns once.
    // Its maxTurns is the job's one limit on model calls (`maxIterations` is the parent's, not
    // a job's): a spec without it (built by hand, not spawned) gets `background.budget.maxTurns`.
    const maxTurns = spec.budget?.maxTurns ?? config.background.budget.maxTurns;
    const budget = new BudgetMeter({ ...spec.budget, maxTurns }, config, {
      usage,
      turns: iterations,
      ...(spec.resume?.wrapUpSent ? { wrapUpSent: true } : {}),
    });
    // Its tools, by catalog name: built-ins, its modules' (imported once per thread), the host's stubs.
    const hostLink = deps.hostTools ?? new HostToolLink(spec.id, () => {});
    // Every module the catalog has (the config's and each agent's), as the main thread checked
    // the names against: a name the config allows is never silently missing here.
    const modules = [...new Set([...config.toolModules, ...Object.values(spec.config.agents).flatMap((agent) => agent.toolModules ?? [])])];
    const catalogTools = await offeredTools(config.tools, modules, spec.hostTools ?? [], hostLink, { jobId: spec.id, agent: spec.agent ?? 'fork' });
    // A typed job (an output schema): bound by response_format or the submit_result tool (typed-output.ts).
    const typed = typedOutputFor(spec, config);
    const prompt = spawnSystemPrompt(agentSystemPrompt(baseline, spec.config, spec.agent), spec);
    // A job paused for approvals goes on with its last response's calls: no message is added.
    let messages: ChatCompletionMessageParam[] = spec.resume?.approval
      ? [...(spec.resume.messages as ChatCompletionMessageParam[])]
      : spec.resume
        ? [...(spec.resume.messages as ChatCompletionMessageParam[]), { role: 'user', content: spec.resume.childResults }]
        : [
            // Usually the same text as its neighbours': one copy for the thread (see thread-shared.ts).
            { role: 'system', content: sharedText(typed ? `${prompt}\n\n${typed.instruction}` : prompt) },
            // Per job, so after the fixed prefix: the prompt above stays byte-identical across jobs.
            ...(spec.parentSummary ? [{ role: 'system' as const, content: orientationMessage(spec.parentSummary) }] : []),
            { role: 'user', content: await subagentStart(spec, hostLink, deps) },
            // A restarted or re-queued run: what its children gave that no run of it has now read.
            ...(spec.heldResults ? [{ role: 'user' as const, content: earlierRunResults(spec.heldResults) }] : []),
          ];
    let pausedCalls = spec.resume?.approval === true;
    if (pausedCalls && spec.resume?.scheduledTurn && deps.deferral) deps.deferral.turn = spec.resume.scheduledTurn;
    // Children's results that came while it waited for approvals: after the paused calls, before its next model call.
    if (pausedCalls && spec.resume?.childResults) children?.onChildResults([HELD_RESULTS_ID], spec.resume.childResults);
    const hooks = jobToolHooks(hostLink, spec.hooks);
    let stopHookActive = false;
    for (;;) {
      const result = await runToolLoop({
        client: deps.client ?? clientFor(config),
        config,
        // The turns are the job's, across its resumes; the meter stops it at this same count.
        maxModelCalls: Math.max(0, maxTurns - iterations),
        messages,
        // submit_result stands in for a catalog tool of its name: one tool per name on the wire.
        tools: [
          ...(typed?.mode === 'tool' ? catalogTools.filter((t) => t.name !== SUBMIT_RESULT_TOOL) : catalogTools),
          ...(deps.jobTools ?? []),
          ...(typed?.tools ?? []),
        ],
        responseFormat: typed?.responseFormat,
        finishedBy: typed?.finishedBy,
        toolContext: {
          workspaceRoot,
          limits: config.toolLimits,
          permissions: deps.permissions,
          // Built when a tool first asks (bash), over the thread's one scrubbed copy: a copy of the
          // environment per job in flight was ~5 KB. The loop copies the context per tool call.
          get env() {
            return (env ??= jobEnv(processTag));
          },
          // The agent and spawn fields of `config` do not shape the policy: one per shared config.
          policy: policyFor(spec.config),
          reads,
          ...(deps.processes ? { processes: deps.processes } : {}),
        },
        signal: deps.signal,
        rateGate: deps.rateGate,
        connections: lane,
        onEvent: deps.onEvent,
        beforeModelCall: children || steering ? () => joinInjections(children?.take(), steering?.take()) : undefined,
        interruptCall: steering ? (interrupt) => steering.duringCall(interrupt) : undefined,
        secrets: secretsFor(spec.config),
        budget,
        // Only the first run of a launch that goes on from an approval pause.
        runPausedCalls: pausedCalls,
        // `sleep`: a schedule_next_turn call ends this run after its batch; the main thread wakes it.
        sleepsAfter: spec.scheduler === 'sleep' ? () => deps.deferral?.turn !== undefined : undefined,
        hooks,
      });
      pausedCalls = false;
      usage = mergeUsageByModel(usage, result.usage);
      iterations += result.iterations;
      if (result.awaitingApproval) {
        const calls = result.awaitingApproval.flatMap((id) => deps.awaited?.get(id) ?? []);
        // Its schedule_next_turn in the same batch is kept: it sleeps once the approved calls have run.
        const turn = spec.scheduler === 'sleep' ? deps.deferral?.turn : undefined;
        const state = {
          messages: result.messages,
          usage,
          iterations,
          ...(budget.wrapUpSent ? { wrapUpSent: true } : {}),
          ...(turn ? { scheduledTurn: turn } : {}),
        };
        return {
          ...withReads({ stopReason: 'aborted', text: result.finalText, usage, iterations }),
          awaitApproval: { state, calls, seenChildren: children?.seen ?? [] },
        };
      }
      const wake = deps.deferral?.turn;
      if (result.asleep && wake) {
        const state = { messages: result.messages, usage, iterations, ...(budget.wrapUpSent ? { wrapUpSent: true } : {}) };
        return {
          ...withReads({ stopReason: 'aborted', text: result.finalText, usage, iterations }),
          sleep: { state, at: wake.at, reason: wake.reason, seenChildren: children?.seen ?? [] },
        };
      }
      const outcome: JobOutcome = withReads({
        stopReason: result.stopReason,
        text: result.finalText,
        usage,
        iterations,
        ...(result.error ? { error: result.error } : {}),
        ...(result.budgetExceeded ? { budgetExceeded: result.budgetExceeded } : {}),
      });
      // A message that came with (or after) its final answer is answered too: it was sent to a
      // running job. Not past its budget (its turns included): that would turn its answer into a stop.
      if (result.stopReason === 'final' && steering?.hasPending && !budget.exhausted()) {
        messages = result.messages;
        continue;
      }
      // A SubagentStop hook may send its answer back once, with a reason: one more turn.
      if (result.stopReason === 'final' && !budget.exhausted()) {
        const reason = await subagentStop(spec, hostLink, deps, result.finalText, stopHookActive);
        if (reason !== undefined) {
          stopHookActive = true;
          messages = [...result.messages, { role: 'user', content: reason }];
          continue;
        }
      }
      // A typed job's final answer is checked against its schema: its value, one repair turn, or RESULT_INVALID.
      if (typed && result.stopReason === 'final') {
        const settled = typed.settle(result.finalText);
        if (settled.kind === 'repair' && !budget.exhausted()) {
          messages = [...result.messages, { role: 'user', content: settled.message }];
          continue;
        }
        if (settled.kind === 'data') Object.assign(outcome, { text: settled.text, data: settled.data });
        else {
          const error =
            settled.kind === 'invalid'
              ? settled.error
              : new ForkpoolError('RESULT_INVALID', 'the result does not match the output schema and no turn was left to repair it');
          Object.assign(outcome, { stopReason: 'error', text: settled.kind === 'invalid' ? settled.text : result.finalText, error: serializeError(error) });
        }
      }
      // exit_on_defer: it answered after asking for a later turn, so it ends `deferred` with that time.
      const deferred = deps.deferral?.turn;
      if (outcome.stopReason === 'final' && deferred && spec.scheduler === 'exit_on_defer') outcome.deferred = { at: deferred.at, reason: deferred.reason };
      // Kept by the main thread for a resume (resume_background_agent); cut here so what crosses stays bounded.
      const conversation = capConversation(result.messages, spec.config.background.keepConversationChars);
      if (conversation) outcome.conversation = conversation;
      if (outcome.stopReason !== 'final' || !children || spec.config.background.childrenOnEnd !== 'wait') return outcome;
      // Its answer came with children's results still unread, or children still running: wait.
      const unread = children.take();
      if (unread) {
        messages = [...result.messages, { role: 'user', content: unread }];
        continue;
      }
      if (children.outstanding.length === 0) return outcome;
      return {
        ...outcome,
        suspend: { state: { messages: result.messages, usage, iterations, ...(budget.wrapUpSent ? { wrapUpSent: true } : {}) }, seenChildren: children.seen },
      };
    }
  } catch (error) {
    const aborted = deps.signal.aborted;
    return withReads({
      stopReason: aborted ? 'aborted' : 'error',
      text: '',
      usage,
      iterations,
      error: serializeError(aborted ? new AbortError(deps.signal.reason) : error),
    });
  } finally {
    lane?.leave();
  }
}

/*
 * Clients are reused across the jobs a thread runs (shared mode runs many): on the Responses
 * wire each holds the SDK client built for it (wires/responses.ts). A client holds no job state;
 * keyed by everything that shapes it.
 */
const clients = new Map<string, ModelClient>();
function clientFor(config: JobSpec['config']): ModelClient {
  const key = JSON.stringify([config.baseUrl, config.apiKey, config.requestTimeoutMs, config.firstByteTimeoutMs, config.api]);
  let client = clients.get(key);
  if (!client) {
    client = createModelClient(config);
    clients.set(key, client);
  }
  return client;
}

/**
 * The task body a worker runs (and the inline executor, on the main thread): validates the
 * spec, wires cancel and permissions to the ports, posts `started`, progress and an explicit
 * `done` (port messages can otherwise arrive after the task's promise resolved).
 */
export async function runJobTask(task: JobTask): Promise<{ jobId: string; stopReason: JobOutcome['stopReason'] }> {
  // Set by the sender, or by the loader from the task's link id (loader.cts).
  const port = task.port;
  const post = (message: WorkerMessage) => port.postMessage(message);
  // Validated, its config shared with this thread's other jobs (see thread-shared.ts).
  const checked = checkedSpec(task.spec);
  if ('invalid' in checked) {
    const jobId = typeof task.spec?.id === 'string' ? task.spec.id : 'unknown';
    const error = new ForkpoolError('PROTOCOL_INVALID', `invalid job spec: ${checked.invalid}`);
    post({ type: 'done', jobId, outcome: { stopReason: 'error', text: '', usage: {}, iterations: 0, error: serializeError(error) } });
    closePorts(task);
    return { jobId, stopReason: 'error' };
  }
  const { spec, release: releaseConfig } = checked;
  const controller = new AbortController();
  post({ type: 'started', jobId: spec.id, threadId, at: Date.now() });
  let entry: Awaited<ReturnType<typeof waitToStart>>;
  try {
    entry = await waitToStart(spec, port, controller, cancelReason);
  } catch (error) {
    // Cancelled (or timed out) before its turn came: it ends having done nothing.
    const usage = spec.resume?.usage ?? {};
    const iterations = spec.resume?.iterations ?? 0;
    const stopReason = controller.signal.aborted ? 'aborted' : 'error';
    const reason = controller.signal.aborted ? new AbortError(controller.signal.reason) : error;
    postEnding(post, spec.id, { stopReason, text: '', usage, iterations, error: serializeError(reason) });
    releaseConfig();
    closePorts(task);
    return { jobId: spec.id, stopReason };
  }
  const deferral: { turn?: ScheduledTurn } = {};
  const children = canSpawn(spec) ? new ChildLink(spec.id, post) : undefined;
  // What it takes is reported, so the main thread gives a later run only what this one never saw.
  const permissionAsked = new PermissionQuestions((requestId, tool, callId) =>
    post({ type: 'permission', jobId: spec.id, requestId, tool, ...(callId !== undefined ? { callId } : {}) }),
  );
  const hostTools = new HostToolLink(spec.id, post);
  // Adaptive concurrency: its model requests ask the main thread's gate, over this port too.
  const remoteGate = task.adaptiveGate && spec.config.background.concurrency === 'adaptive' ? new RemoteRateGate(spec.id, post, port) : undefined;
  const steering = new SteeringInbox(spec.steering ?? [], (ids) => post({ type: 'progress', jobId: spec.id, event: { type: 'messages_received', ids } }));
  const onMessage = (raw: unknown) => {
    const parsed = mainMessageSchema.safeParse(raw);
    if (!parsed.success) return;
    const message = parsed.data;
    if (message.type === 'cancel') controller.abort(cancelReason(message.reason));
    else if (message.type === 'spawn-result') children?.onSpawnResult(message);
    else if (message.type === 'steer') steering.receive({ id: message.id, text: message.text }, message.interrupt);
    else if (message.type === 'permission-answer') permissionAsked.answer(message.requestId, message);
    else if (message.type === 'tool-answer') hostTools.answer(message);
    else if (message.type === 'gate-admitted') remoteGate?.admitted(message.ticket);
    else children?.onChildResults(message.childIds, message.text);
  };
  port.on('message', onMessage);
  // What came while it waited for its turn, in order (a cancel among them already aborted it).
  for (const raw of entry.early) onMessage(raw);
  const awaited = new Map<string, AwaitedCall>();
  const permissions = approvalGate(
    (request) => answerOrFallback(permissionAsked.ask(request.tool, request.callId), port, TIMINGS.permissionAnswerMs, DENIED, controller.signal),
    awaited,
  );
  try {
    const outcome = await runBackgroundJob(spec, {
      signal: controller.signal,
      lane: entry.lane,
      permissions,
      onEvent: (event) => post({ type: 'progress', jobId: spec.id, event }),
      // The main thread kills what is left of these when this thread dies or is stopped.
      processes: {
        started: (pgid) => post({ type: 'process', jobId: spec.id, pgid, state: 'started' }),
        ended: (pgid) => post({ type: 'process', jobId: spec.id, pgid, state: 'ended' }),
      },
      rateGate: remoteGate ?? (task.rateGateBuffer ? new SharedRateGate(task.rateGateBuffer) : undefined),
      jobTools: jobToolsFor(spec, post, children, controller.signal, (turn) => (deferral.turn = turn)),
      deferral,
      ...(children ? { children } : {}),
      steering,
      hostTools,
      awaited,
    });
    postEnding(post, spec.id, outcome);
    return { jobId: spec.id, stopReason: outcome.stopReason };
  } finally {
    entry.lane.leave();
    releaseConfig();
    port.off('message', onMessage);
    closePorts(task);
  }
}

/** Why the job's signal aborts: its wall-clock budget ran out, a timeout, or a cancel. */
function cancelReason(reason: StopRequest): ForkpoolError {
  if (reason === 'budget') return new ForkpoolError('BUDGET_EXCEEDED', 'budget maxWallclockMinutes exhausted: stopped with what it had');
  return new ForkpoolError(reason === 'timeout' ? 'JOB_TIMEOUT' : 'JOB_CANCELLED', `job ${reason}`);
}

function closePorts(task: JobTask): void {
  task.port?.close();
}
