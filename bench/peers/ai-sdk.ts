/**
 * The Vercel AI SDK (`ai` 6) as a bench peer, used the way its users fan out: one
 * `generateText` per job, with tools and a step limit, `Promise.all` across the jobs, all on
 * the main thread. A limiter keeps at most `cap` jobs running, like forkpool's `maxConcurrent`.
 * The model is the simulator, through `@ai-sdk/openai-compatible` (chat completions).
 * A dev dependency: imported only when a bench cell runs this peer.
 */
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import { DEFAULTS } from 'forkpool/protocol';
import { generateText, jsonSchema, stepCountIs, tool, type ToolSet } from 'ai';
import type { CellSpec } from '../types.js';
import { limiter, observedFetch, peerToolkit, type PeerExecutor, type PeerTool } from './toolkit.js';

export async function createAiSdkPeer(spec: CellSpec, onToolResult?: (name: string, ok: boolean, ms: number) => void): Promise<PeerExecutor> {
  const kit = await peerToolkit(spec, onToolResult);
  const { config } = kit;
  // Set while a probe runs alone: every model request is that job's.
  let onRequest: (() => void) | undefined;
  let requests = 0;
  const provider = createOpenAICompatible({
    name: 'forkpool-sim',
    baseURL: spec.simUrl,
    apiKey: config.apiKey ?? 'sim',
    fetch: observedFetch(() => {
      requests++;
      onRequest?.();
    }),
  });
  const model = provider.chatModel(config.model);

  const toolSet = (tools: readonly PeerTool[]): ToolSet =>
    Object.fromEntries(
      tools.map((t) => [
        t.name,
        tool({
          description: t.description,
          // forkpool's own JSON schema; arguments are validated by forkpool's zod schema in `run`.
          inputSchema: jsonSchema<Record<string, unknown>>(t.parameters as Parameters<typeof jsonSchema>[0]),
          execute: (args, { abortSignal }) => t.run(args, abortSignal),
        }),
      ]),
    );
  const tools = toolSet(kit.tools);

  const runJob = async (task: string, jobTools: ToolSet, abortSignal?: AbortSignal) => {
    const result = await generateText({
      model,
      instructions: kit.systemPrompt,
      prompt: task,
      tools: jobTools,
      stopWhen: stepCountIs(config.background.budget.maxTurns),
      temperature: config.temperature ?? DEFAULTS.temperature,
      maxRetries: config.maxRetries,
      ...(abortSignal ? { abortSignal } : {}),
    });
    return result.finishReason === 'stop' && result.text.trim() !== '';
  };
  const limit = limiter(spec.concurrency);

  return {
    modelRequests: () => requests,
    async fanOut(tasks, hooks) {
      await Promise.all(
        tasks.map(async (task, index) => {
          hooks.started(index);
          try {
            const answered = await limit(async () => {
              hooks.running(index);
              try {
                return await runJob(task, tools);
              } finally {
                hooks.released(index);
              }
            });
            hooks.ended(index, answered);
          } catch (error) {
            hooks.ended(index, false, error instanceof Error ? error.message : String(error));
          }
        }),
      );
    },
    async runOne(task, options) {
      onRequest = options.onModelRequest;
      try {
        options.onStart();
        const jobTools = options.stubborn ? toolSet(kit.stubbornTools(options.stubborn.onSpin)) : tools;
        return { ok: await runJob(task, jobTools, options.signal) };
      } catch {
        return { ok: false };
      } finally {
        onRequest = undefined;
      }
    },
  };
}
