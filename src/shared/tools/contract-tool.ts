import { argsSchemaOf, jsonSchemaOf, toolAnswerText, type ToolDefinition } from '../tool-contract.js';
import type { ToolContext, ToolDefinition as LoopTool } from './types.js';

/** Who calls a tool: what its {@link ToolCallContext} says besides the signal and call id. */
export interface ToolCaller {
  jobId: string;
  agent: string;
}

/**
 * A public {@link ToolDefinition} (a tool module's, or a host tool in the parent's own loop) as
 * the loop's tool: its zod schema (or its JSON Schema read by zod), the JSON Schema the model is
 * shown, its gate and timeout; `run` gets `{ signal, jobId, callId, agent }` and its answer
 * becomes text. Its errors are the loop's to turn into the model's tool error.
 */
export function loopToolOf(def: ToolDefinition, caller: ToolCaller): LoopTool {
  return {
    name: def.name,
    description: def.description,
    parameters: argsSchemaOf(def.parameters),
    jsonSchema: jsonSchemaOf(def.parameters),
    gated: def.gated === true,
    ...(def.timeoutMs !== undefined ? { timeoutMs: def.timeoutMs } : {}),
    async run(args, ctx: ToolContext & { callId?: string }) {
      const answer = await def.run(args, { signal: ctx.signal, jobId: caller.jobId, callId: ctx.callId ?? '', agent: caller.agent });
      return toolAnswerText(answer);
    },
  };
}
