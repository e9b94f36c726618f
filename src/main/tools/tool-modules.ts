import { createRequire } from 'node:module';
import path from 'node:path';
import { threadId } from 'node:worker_threads';
import { ConfigError, errorMessage } from '../../shared/errors.js';
import type { ForkpoolConfig } from '../../shared/config.js';
import type { ToolDefinition } from '../../shared/tool-contract.js';
import { toolsOfModule } from '../../shared/tool-modules.js';

/**
 * Tool modules on the main thread: each entry of `toolModules` (the config's and its agents')
 * resolved to an absolute file once, then loaded once for its names and schemas (and the
 * parent's own loop). Loading is synchronous (`require` of an ES module, Node 22.12+) so that
 * `loadConfig` and a manager's constructor report a module that fails as a config error at once;
 * a module with top-level await cannot be loaded so, and says so. Workers import the same file
 * (src/worker/tool-modules.ts).
 */

/** Resolves each `toolModules` entry to an absolute path: `./x.js` against `baseDir`, a package specifier from there. */
export function resolveToolModules(config: ForkpoolConfig, baseDir: string, source?: string): ForkpoolConfig {
  const resolveAll = (entries: readonly string[], field: string) => entries.map((entry, i) => resolveToolModule(entry, baseDir, `${field}[${i}]`, source));
  const agents = Object.fromEntries(
    Object.entries(config.agents).map(([name, agent]) => [
      name,
      agent.toolModules ? { ...agent, toolModules: resolveAll(agent.toolModules, `agents.${name}.toolModules`) } : agent,
    ]),
  );
  const resolved = { ...config, toolModules: resolveAll(config.toolModules, 'toolModules'), agents };
  return { ...resolved, protectedPaths: [...new Set([...config.protectedPaths, ...protectedModules(resolved)])] };
}

/**
 * A tool module inside the workspace is code forkpool runs on the main thread and in every job's
 * thread: the write tools must not change it (a job could plant code that runs later). Each one
 * becomes a protected path (write_file and edit_file refuse it; bash in the sandbox sees it
 * read-only). Files it imports are not known here: keep them outside the workspace, or protect them.
 */
function protectedModules(config: ForkpoolConfig): string[] {
  return toolModulesOf(config).flatMap((file) => {
    const rel = path.relative(config.workspaceRoot, file);
    return rel === '' || rel.startsWith('..') || path.isAbsolute(rel) ? [] : [rel.split(path.sep).join('/')];
  });
}

function resolveToolModule(entry: string, baseDir: string, field: string, source: string | undefined): string {
  if (path.isAbsolute(entry)) return entry;
  if (entry.startsWith('./') || entry.startsWith('../')) return path.resolve(baseDir, entry);
  try {
    return createRequire(path.join(baseDir, 'package.json')).resolve(entry);
  } catch (error) {
    throw moduleError(field, entry, `it cannot be found from ${baseDir} (${errorMessage(error)})`, source);
  }
}

/** Every tool module the config names (its own and its agents'), absolute, without duplicates. */
export function toolModulesOf(config: ForkpoolConfig): string[] {
  const agentModules = Object.values(config.agents).flatMap((agent) => agent.toolModules ?? []);
  return [...new Set([...config.toolModules, ...agentModules])];
}

const loaded = new Map<string, ToolDefinition[]>();

/** The module's tools, loaded once on this thread. Throws a ConfigError naming it when it fails to load. */
export function loadToolModule(file: string): ToolDefinition[] {
  const cached = loaded.get(file);
  if (cached) return cached;
  let tools: ToolDefinition[];
  try {
    const namespace: unknown = createRequire(import.meta.url)(file);
    tools = toolsOfModule(namespace, file, { thread: 'main', threadId });
  } catch (error) {
    const code = (error as { code?: unknown }).code;
    const why = code === 'ERR_REQUIRE_ASYNC_MODULE' ? 'it uses top-level await, which a tool module cannot' : errorMessage(error);
    throw moduleError('toolModules', file, `it failed to load: ${why}`, undefined, error);
  }
  loaded.set(file, tools);
  return tools;
}

function moduleError(field: string, entry: string, why: string, source: string | undefined, cause?: unknown): ConfigError {
  const error = new ConfigError([
    {
      field,
      expected: 'a module default-exporting ToolDefinition[] or (ctx) => ToolDefinition[]',
      received: `"${entry}": ${why}`,
      ...(source ? { source } : {}),
    },
  ]);
  if (cause !== undefined) Object.defineProperty(error, 'cause', { value: cause });
  return error;
}
