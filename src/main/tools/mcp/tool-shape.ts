/**
 * The public tool contract (issue 34 §1) as the MCP hub builds against it. Engineer "tools"
 * owns the real one (src/shared/tool-contract.ts); this file goes when that one lands.
 */
import type { ZodType } from 'zod';

export type JsonValue = string | number | boolean | null | JsonValue[] | { [key: string]: JsonValue };

export interface ToolCallContext {
  signal: AbortSignal;
  jobId: string;
  callId: string;
  agent: string;
}

export interface ToolDefinition<Args = unknown> {
  name: string;
  description: string;
  parameters: ZodType<Args> | Record<string, unknown>;
  gated?: boolean;
  timeoutMs?: number;
  run(args: Args, ctx: ToolCallContext): Promise<string | JsonValue> | string | JsonValue;
}
