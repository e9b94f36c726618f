import { z } from 'zod';
import type { BuiltinToolName } from '../fixed-limits.js';
import { bashTool } from './bash.js';
import { codeOutlineTool } from './code-outline.js';
import { editFileTool } from './edit-file.js';
import { findFilesTool } from './find-files.js';
import { grepTool } from './grep.js';
import { listDirTool } from './list-dir.js';
import { readFileTool } from './read-file.js';
import type { ToolDefinition } from './types.js';
import { writeFileTool } from './write-file.js';
import { compactSchema } from './compact-schema.js';

export type { PermissionGate, PermissionRequest, ProcessRegistry, ToolContext, ToolDefinition, ToolPolicy } from './types.js';
export { checkSandbox, type SandboxStatus } from './bwrap.js';
export { DEFAULT_TOOL_POLICY, toolPolicyFrom } from './policy.js';
export { displayPath, resolveInWorkspace, resolveWorkspaceRoot } from './sandbox.js';
export { redactSecrets, scrubEnv, secretValuesOf } from './secrets.js';
export { bashTool, codeOutlineTool, editFileTool, findFilesTool, grepTool, listDirTool, readFileTool, writeFileTool };

/** Every built-in tool by name. Frozen: callers pick with {@link builtinTools}. */
export const BUILTIN_TOOLS: Readonly<Record<BuiltinToolName, ToolDefinition>> = Object.freeze({
  read_file: readFileTool,
  list_dir: listDirTool,
  find_files: findFilesTool,
  grep: grepTool,
  code_outline: codeOutlineTool,
  bash: bashTool,
  write_file: writeFileTool,
  edit_file: editFileTool,
});

/** The built-in definitions among `names`, in that order, without duplicates (other catalog names are skipped). */
export function builtinTools(names: readonly string[]): ToolDefinition[] {
  return [...new Set(names)].filter(isBuiltinTool).map((name) => BUILTIN_TOOLS[name]);
}

export function isBuiltinTool(name: string): name is BuiltinToolName {
  return Object.hasOwn(BUILTIN_TOOLS, name);
}

export interface OpenAIFunctionTool {
  type: 'function';
  function: { name: string; description: string; parameters: Record<string, unknown> };
}

/**
 * The chat-completions `tools` entry for a definition. The JSON schema describes the *input*
 * (what the model sends), so fields with defaults are optional; `$schema` is dropped.
 */
export function toOpenAITool(def: ToolDefinition): OpenAIFunctionTool {
  // Converting the schemas took 4-16 ms per job (8 tools) in a young isolate: once per definition.
  const cached = openAIToolCache.get(def);
  if (cached) return cached;
  // A job's own definitions (report_alert, ...) are new objects per job over a shared schema:
  // equal ones share one form too, else each job in flight kept its own (~1 KB; issue 23).
  const byText = openAIToolsBySchema.get(def.parameters);
  const text = `${def.name}\0${def.description}`;
  const tool = byText?.get(text) ?? convert(def);
  if (!byText) openAIToolsBySchema.set(def.parameters, new Map([[text, tool]]));
  else if (byText.size < MAX_FORMS_PER_SCHEMA) byText.set(text, tool);
  openAIToolCache.set(def, tool);
  return tool;
}

function convert(def: ToolDefinition): OpenAIFunctionTool {
  if (def.jsonSchema) return { type: 'function', function: { name: def.name, description: def.description, parameters: def.jsonSchema } };
  const { $schema: _ignored, ...full } = z.toJSONSchema(def.parameters, { io: 'input' }) as Record<string, unknown>;
  // Bounds stay in the zod validation (its errors name them); the model is sent the compact form.
  const parameters = compactSchema(full) as Record<string, unknown>;
  return { type: 'function', function: { name: def.name, description: def.description, parameters } };
}

/** Keyed by the definition object: the built-ins live as long as the thread; a job's own tools with the job. */
const openAIToolCache = new WeakMap<ToolDefinition, OpenAIFunctionTool>();
/** By schema, then name and description; a bound, since a description may differ per job. */
const openAIToolsBySchema = new WeakMap<object, Map<string, OpenAIFunctionTool>>();
const MAX_FORMS_PER_SCHEMA = 16;
