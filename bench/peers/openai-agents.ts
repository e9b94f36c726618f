/**
 * The OpenAI Agents SDK (`@openai/agents` 0.9) as a bench peer, used the way its users fan out:
 * a research agent exposed to an orchestrator agent as a tool (`agent.asTool`); the
 * orchestrator's model asks for one call per question and the runner runs those calls
 * concurrently, each a nested run, all on the main thread. The tool's `invoke` goes through a
 * limiter so at most `cap` nested runs are active, like forkpool's `maxConcurrent`.
 *
 * Both agents talk to the simulator through the chat-completions model with their own OpenAI
 * client; tracing is off (it would export to OpenAI's servers). A job's time runs from the
 * runner invoking its tool to the nested run's end: the orchestrator's own two model calls
 * (ask for the calls, sum up the results) are outside it, as a parent's turn is outside a
 * forkpool cell's fan-out. A dev dependency: imported only when a bench cell runs this peer.
 */
import { Agent, OpenAIChatCompletionsModel, Runner, setTracingDisabled, tool } from '@openai/agents';
import { DEFAULTS } from 'forkpool/protocol';
import OpenAI from 'openai';
import { z } from 'zod';
import type { CellSpec } from '../types.js';
import { limiter, observedFetch, peerToolkit, type PeerExecutor, type PeerFanoutHooks, type PeerTool } from './toolkit.js';

/** The tool name the simulated model uses to hand out one question per call (as it does for forkpool). */
const SUB_AGENT_TOOL = 'spawn_background_agent';
const spawnArgs = z.object({ task: z.string(), label: z.string() });

export async function createOpenAiAgentsPeer(spec: CellSpec, onToolResult?: (name: string, ok: boolean, ms: number) => void): Promise<PeerExecutor> {
  setTracingDisabled(true);
  const kit = await peerToolkit(spec, onToolResult);
  const { config } = kit;
  let onRequest: (() => void) | undefined;
  let requests = 0;
  // The SDK's declarations resolve openai's CommonJS types, ours the ESM ones: the same class.
  const clientFor = (observe: boolean) =>
    new OpenAI({
      apiKey: config.apiKey ?? 'sim',
      baseURL: spec.simUrl,
      maxRetries: config.maxRetries,
      timeout: config.requestTimeoutMs,
      ...(observe
        ? {
            fetch: observedFetch(() => {
              requests++;
              onRequest?.();
            }),
          }
        : {}),
    }) as unknown as ConstructorParameters<typeof OpenAIChatCompletionsModel>[0];
  // The sub-agents' client reports requests (the probes); the orchestrator's does not.
  const researchModel = new OpenAIChatCompletionsModel(clientFor(true), config.model);
  const orchestratorModel = new OpenAIChatCompletionsModel(clientFor(false), config.model);
  const runner = new Runner({ tracingDisabled: true });

  const functionTools = (tools: readonly PeerTool[]) =>
    tools.map((t) =>
      tool({
        name: t.name,
        description: t.description,
        // forkpool's JSON schema, not strict; arguments are validated by forkpool's zod schema in `run`.
        parameters: {
          ...t.parameters,
          type: 'object',
          properties: (t.parameters.properties ?? {}) as Record<string, never>,
          required: (t.parameters.required ?? []) as string[],
          additionalProperties: true,
        },
        strict: false,
        execute: (args, _context, details) => t.run(args, details?.signal),
      }),
    );

  /**
   * The orchestrator with its sub-agent tool; `hooks` see every invocation of that tool.
   * `signal` cancels the sub-agents: in 0.9 the runner does not hand its own run's signal to
   * function tools, so aborting the orchestrator's run alone leaves a running sub-agent running
   * until it ends; asTool's `runOptions.signal` reaches the nested run.
   */
  const orchestrator = (tools: readonly PeerTool[], hooks: Pick<PeerFanoutHooks, 'started' | 'running' | 'released' | 'ended'>, signal?: AbortSignal) => {
    const researcher = new Agent({
      name: 'researcher',
      instructions: kit.systemPrompt,
      model: researchModel,
      modelSettings: { temperature: config.temperature ?? DEFAULTS.temperature },
      tools: functionTools(tools),
    });
    const answered = new Set<string>();
    const subAgent = researcher.asTool({
      toolName: SUB_AGENT_TOOL,
      toolDescription: 'Run a research sub-agent on one self-contained task; returns its answer.',
      parameters: spawnArgs,
      inputBuilder: ({ params }) => params.task,
      runOptions: { maxTurns: config.background.budget.maxTurns, ...(signal ? { signal } : {}) },
      customOutputExtractor: (result) => {
        const text = typeof result.finalOutput === 'string' ? result.finalOutput : '';
        if (text.trim() && result.agentToolInvocation.toolCallId) answered.add(result.agentToolInvocation.toolCallId);
        return text;
      },
    });
    const limit = limiter(spec.concurrency);
    const invoke = subAgent.invoke.bind(subAgent);
    let next = 0;
    subAgent.invoke = async (context, input, details) => {
      const index = next++;
      const callId = details?.toolCall?.callId ?? `call-${index}`;
      hooks.started(index);
      try {
        const output = await limit(async () => {
          hooks.running(index);
          try {
            return await invoke(context, input, details);
          } finally {
            hooks.released(index);
          }
        });
        hooks.ended(index, answered.has(callId), answered.has(callId) ? undefined : String(output).slice(0, 300));
        return output;
      } catch (error) {
        hooks.ended(index, false, error instanceof Error ? error.message : String(error));
        throw error;
      }
    };
    return new Agent({
      name: 'orchestrator',
      instructions: 'Hand each question to a research sub-agent with one tool call per question, then sum up.',
      model: orchestratorModel,
      modelSettings: { temperature: config.temperature ?? DEFAULTS.temperature },
      tools: [subAgent],
    });
  };
  // One question: the simulated model delegates it whole; several: one call per numbered question.
  const prompt = (tasks: readonly string[]) => (tasks.length === 1 ? `Delegate: ${tasks[0]}` : tasks.map((t, i) => `${i + 1}. ${t}`).join('\n'));

  return {
    modelRequests: () => requests,
    async fanOut(tasks, hooks) {
      const seen = new Set<number>();
      const agent = orchestrator(kit.tools, {
        started: hooks.started,
        running: hooks.running,
        released: hooks.released,
        ended: (index, ok, detail) => {
          seen.add(index);
          hooks.ended(index, ok, detail);
        },
      });
      try {
        await runner.run(agent, prompt(tasks), { maxTurns: 3 });
      } finally {
        // Jobs the orchestrator never started (its model asked for fewer calls) end as failed.
        for (let i = 0; i < tasks.length; i++) if (!seen.has(i)) hooks.ended(i, false, 'the orchestrator never called its sub-agent for this task');
      }
    },
    async runOne(task, options) {
      let ok = false;
      const tools = options.stubborn ? kit.stubbornTools(options.stubborn.onSpin) : kit.tools;
      const hooks = { started: () => options.onStart(), running: () => {}, released: () => {}, ended: (_index: number, answered: boolean) => (ok = answered) };
      const agent = orchestrator(tools, hooks, options.signal);
      onRequest = options.onModelRequest;
      try {
        await runner.run(agent, prompt([task]), { maxTurns: 3, signal: options.signal });
        return { ok };
      } catch {
        return { ok: false };
      } finally {
        onRequest = undefined;
      }
    },
  };
}
