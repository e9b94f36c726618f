import type { ForkpoolConfig } from '../../shared/config.js';
import { ConfigError, ForkpoolError } from '../../shared/errors.js';
import { checkToolDefinition, jsonSchemaOf, type ToolDefinition } from '../../shared/tool-contract.js';
import type { HostToolStub } from '../../shared/protocol.js';
import { BUILTIN_TOOLS, toOpenAITool } from '../../shared/tools/index.js';
import { loopToolOf, type ToolCaller } from '../../shared/tools/contract-tool.js';
import type { ToolDefinition as LoopTool } from '../../shared/tools/types.js';
import { loadToolModule, toolModulesOf } from './tool-modules.js';

/** Where a catalog tool comes from, and so where it runs: a job's thread (built-in, module) or the main thread (host, MCP). */
export type ToolSourceName = 'builtin' | 'host' | 'module' | `mcp:${string}`;

/** One tool of the catalog, as `forkpool tools` shows it. */
export interface CatalogEntry {
  name: string;
  source: ToolSourceName;
  description: string;
  gated: boolean;
  /** The JSON Schema the model is shown. */
  parameters: Record<string, unknown>;
  /** A tool module's file (source `module`). */
  module?: string;
  /** The definition that runs (not for a built-in: its code is the loop's own). */
  definition?: ToolDefinition;
}

/**
 * Tools a manager owns a connection for (an MCP server: src/main/tools/mcp/): started before
 * first use, closed with the manager; its tools run on the main thread, as host tools do.
 */
export interface ToolSource {
  /** Its catalog source, e.g. `mcp:github`. */
  readonly source: `mcp:${string}`;
  /** Connects and lists its tools; called once, before first use. */
  start(): Promise<readonly ToolDefinition[]>;
  /** Tells of a new list of tools (MCP `tools/list_changed`); the catalog replaces this source's entries. */
  onChange?(listener: (tools: readonly ToolDefinition[]) => void): void;
  /** Names it will offer once started (e.g. `mcp__github__*`): the config may name them before it has. */
  claims?(name: string): boolean;
  close(): Promise<void>;
}

/**
 * The one tool catalog of a manager (and its session): built-ins, the embedder's host tools,
 * tool modules' tools and tool sources' (MCP) tools, keyed by name. Config, agents, spawns and
 * grants name tools from it; a name in two places is a config error naming both.
 */
export class ToolCatalog {
  readonly #entries = new Map<string, CatalogEntry>();
  readonly #sources: readonly ToolSource[];
  #started: Promise<void> | undefined;

  constructor(config: ForkpoolConfig, hostTools: readonly ToolDefinition[] = [], sources: readonly ToolSource[] = []) {
    for (const builtin of Object.values(BUILTIN_TOOLS)) {
      const parameters = toOpenAITool(builtin).function.parameters;
      this.#add({ name: builtin.name, source: 'builtin', description: builtin.description, gated: builtin.gated, parameters });
    }
    hostTools.forEach((def, i) => {
      checkToolDefinition(def, `tools[${i}]`);
      this.#add(entryOf(def, 'host'));
    });
    for (const file of toolModulesOf(config)) for (const def of loadToolModule(file)) this.#add({ ...entryOf(def, 'module'), module: file });
    this.#sources = sources;
  }

  /** Every entry, built-ins first. */
  entries(): CatalogEntry[] {
    return [...this.#entries.values()];
  }

  get(name: string): CatalogEntry | undefined {
    return this.#entries.get(name);
  }

  /** A name the catalog has, or that a tool source not yet started claims. */
  knows(name: string): boolean {
    return this.#entries.has(name) || this.#sources.some((source) => source.claims?.(name) === true);
  }

  /**
   * Every tool name the config gives (tools, grantedTools, each agent's tools) must be one the
   * catalog knows: a ConfigError naming the field and the name, and listing the catalog.
   */
  checkConfig(config: ForkpoolConfig): void {
    const issues: Array<{ field: string; name: string }> = [];
    const check = (names: readonly string[], field: string) => names.forEach((name, i) => this.knows(name) || issues.push({ field: `${field}[${i}]`, name }));
    check(config.tools, 'tools');
    check(config.grantedTools, 'grantedTools');
    for (const [agent, entry] of Object.entries(config.agents)) check(entry.tools ?? [], `agents.${agent}.tools`);
    if (issues.length === 0) return;
    const known = [...this.#entries.keys()].join(', ');
    throw new ConfigError(issues.map(({ field, name }) => ({ field, expected: `a tool of the catalog (${known})`, received: `"${name}" (TOOL_UNKNOWN)` })));
  }

  /** The stubs a job's thread offers for the main-thread tools among `names` (see HostToolStub). */
  hostStubs(names: readonly string[]): HostToolStub[] {
    const stubs: HostToolStub[] = [];
    for (const name of names) {
      const entry = this.#entries.get(name);
      if (!entry?.definition || !runsOnHost(entry.source)) continue;
      const { timeoutMs } = entry.definition;
      stubs.push({ name, description: entry.description, parameters: entry.parameters, gated: entry.gated, ...(timeoutMs !== undefined ? { timeoutMs } : {}) });
    }
    return stubs;
  }

  /** The definition a job's `tool-call` runs: only a main-thread tool (a job cannot make the host run anything else). */
  hostTool(name: string): ToolDefinition | undefined {
    const entry = this.#entries.get(name);
    return entry?.definition && runsOnHost(entry.source) ? entry.definition : undefined;
  }

  /** The parent's own loop: the catalog tools among `names` that are not built-ins (the parent adds those itself). */
  parentTools(names: readonly string[], caller: ToolCaller): LoopTool[] {
    return names.flatMap((name) => {
      const definition = this.#entries.get(name)?.definition;
      return definition ? [loopToolOf(definition, caller)] : [];
    });
  }

  /** Starts every tool source once and takes in its tools; later changes replace them. */
  start(): Promise<void> {
    this.#started ??= Promise.all(
      this.#sources.map(async (source) => {
        source.onChange?.((tools) => this.#replace(source.source, tools));
        this.#replace(source.source, await source.start());
      }),
    ).then(() => {});
    return this.#started;
  }

  async close(): Promise<void> {
    await Promise.allSettled(this.#sources.map((source) => source.close()));
  }

  #replace(source: ToolSourceName, tools: readonly ToolDefinition[]): void {
    for (const [name, entry] of this.#entries) if (entry.source === source) this.#entries.delete(name);
    tools.forEach((def, i) => {
      checkToolDefinition(def, `${source} [${i}]`);
      this.#add(entryOf(def, source));
    });
  }

  #add(entry: CatalogEntry): void {
    const held = this.#entries.get(entry.name);
    if (held) {
      const where = (e: CatalogEntry) => (e.module ? `${e.source} ${e.module}` : e.source);
      throw new ForkpoolError('CONFIG_INVALID', `tool "${entry.name}" (${where(entry)}) clashes with the ${where(held)} tool of the same name; rename one`);
    }
    this.#entries.set(entry.name, entry);
  }
}

function entryOf(def: ToolDefinition, source: ToolSourceName): CatalogEntry {
  return { name: def.name, source, description: def.description, gated: def.gated === true, parameters: jsonSchemaOf(def.parameters), definition: def };
}

/** Host and MCP tools run on the main thread; built-ins and modules in the job's thread. */
function runsOnHost(source: ToolSourceName): boolean {
  return source === 'host' || source.startsWith('mcp:');
}
