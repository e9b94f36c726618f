import { checkToolDefinition, type ToolDefinition } from './tool-contract.js';

/** What a tool module's default-exported function is called with, once per thread. */
export interface ToolModuleContext {
  /** `main`: the main thread (names and schemas, the parent's own loop); `worker`: a job's thread. */
  thread: 'main' | 'worker';
  threadId: number;
}

/**
 * The tools a module's namespace holds: its default export, `ToolDefinition[]` or
 * `(ctx) => ToolDefinition[]`, each checked as `tool()` checks it. Throws naming the module.
 */
export function toolsOfModule(namespace: unknown, where: string, ctx: ToolModuleContext): ToolDefinition[] {
  const exported = namespace !== null && typeof namespace === 'object' && 'default' in namespace ? namespace.default : namespace;
  const list: unknown = typeof exported === 'function' ? (exported as (ctx: ToolModuleContext) => unknown)(ctx) : exported;
  if (!Array.isArray(list)) {
    throw new Error(`${where}: its default export must be ToolDefinition[] or (ctx) => ToolDefinition[], received ${list === null ? 'null' : typeof list}`);
  }
  list.forEach((def, i) => checkToolDefinition(def, `${where} [${i}]`));
  return list as ToolDefinition[];
}
