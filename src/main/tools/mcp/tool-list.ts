/**
 * A server's `tools/list` answer, checked and bounded before any of it reaches a catalog: each
 * tool is accepted (its name prefixed, its description capped, both redacted) or refused with
 * the reason, which `status()` shows. Pure functions.
 */
import { z } from 'zod';
import { redactToolOutput } from '../../../shared/tools/secrets.js';
import { MCP_LIMITS } from './limits.js';

/** A catalog name: the contract's pattern. */
const TOOL_NAME = /^[a-zA-Z0-9_-]{1,64}$/;

/** One MCP tool as listed (the fields the hub reads; the rest is ignored). */
export interface ListedTool {
  name: string;
  description?: string | undefined;
  inputSchema?: unknown;
}

/** A tool the hub offers. */
export interface AcceptedTool {
  /** `mcp__<server>__<tool>`. */
  name: string;
  /** The server's own name for it. */
  mcpName: string;
  description: string;
  /** The server's JSON Schema, passed through (redacted). */
  parameters: Record<string, unknown>;
}

export interface CheckedToolList {
  accepted: AcceptedTool[];
  /** One line per refused tool: its name and why. */
  refused: string[];
}

/** The catalog name of `tool` on `server`. */
export function mcpToolName(server: string, tool: string): string {
  return `mcp__${server}__${tool}`;
}

/** Checks every listed tool of `server`; `secrets` are redacted from descriptions and schemas. */
export function checkToolList(server: string, listed: readonly ListedTool[], secrets: readonly string[]): CheckedToolList {
  const accepted: AcceptedTool[] = [];
  const refused: string[] = [];
  const seen = new Set<string>();
  for (const tool of listed) {
    const shown = JSON.stringify(String(tool.name).slice(0, 80));
    if (accepted.length >= MCP_LIMITS.maxToolsPerServer) {
      refused.push(`${shown}: more than ${MCP_LIMITS.maxToolsPerServer} tools on one server`);
      continue;
    }
    const name = mcpToolName(server, tool.name);
    if (!TOOL_NAME.test(name)) {
      refused.push(`${shown}: "${name.slice(0, 80)}" is not a tool name (letters, digits, "_" or "-", at most 64 characters)`);
      continue;
    }
    if (seen.has(name)) {
      refused.push(`${shown}: listed twice`);
      continue;
    }
    const parameters = checkedSchema(tool.inputSchema, secrets);
    if (typeof parameters === 'string') {
      refused.push(`${shown}: ${parameters}`);
      continue;
    }
    seen.add(name);
    const description = redactToolOutput(String(tool.description ?? '').slice(0, MCP_LIMITS.descriptionMaxChars), secrets);
    accepted.push({ name, mcpName: tool.name, description: description || `${tool.name} (MCP server "${server}")`, parameters });
  }
  return { accepted, refused };
}

/** The schema as a plain object, or why it is refused. */
function checkedSchema(schema: unknown, secrets: readonly string[]): Record<string, unknown> | string {
  if (typeof schema !== 'object' || schema === null || Array.isArray(schema)) return 'its input schema is not a JSON object';
  // Measured as JSON: the size the model's request and the argument check would pay for.
  const json = JSON.stringify(schema);
  if (json.length > MCP_LIMITS.schemaMaxChars) {
    return `its input schema is ${json.length} characters of JSON (limit ${MCP_LIMITS.schemaMaxChars})`;
  }
  const type = (schema as { type?: unknown }).type;
  if (type !== undefined && type !== 'object') return `its input schema's type is ${JSON.stringify(type)}, not "object"`;
  let redacted: Record<string, unknown>;
  try {
    redacted = JSON.parse(redactToolOutput(json, secrets)) as Record<string, unknown>;
  } catch {
    // A secret cut across an escape sequence: the redacted text is no longer JSON.
    return 'its input schema holds a configured secret';
  }
  try {
    // Arguments are checked against the schema as zod reads it (the tool contract): one it cannot read is refused here, alone.
    z.fromJSONSchema(redacted);
  } catch (error) {
    return `its input schema cannot be read (${error instanceof Error ? error.message.slice(0, 200) : 'unknown error'})`;
  }
  return redacted;
}
