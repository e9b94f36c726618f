/**
 * `forkpool tools [--config FILE] [--json]`: the tool catalog the config gives a job — the
 * built-ins, its tool modules' tools (loaded as `run`, `fanout`, `serve` and `worker` load
 * them) and its MCP servers' tools (each server connected, listed, closed) — with each tool's
 * source, gate and JSON Schema. Host tools exist only in a program that
 * passes them (`new BackgroundManager({ tools })`): its `manager.tools.entries()` lists them.
 */
import { loadConfig } from '../main/setup/config-load.js';
import { ToolCatalog, type CatalogEntry } from '../main/tools/catalog.js';
import { mcpServersOf, mcpToolSources } from '../main/tools/mcp/index.js';
import { configuredSecrets } from '../shared/tools/secrets.js';
import { escapeForTerminal, jsonForTerminal } from '../shared/terminal-text.js';
import { EXIT, reportErrorsAsJson } from './exit.js';

export interface ToolsFlags {
  config?: string;
  json?: boolean;
}

export async function toolsCommand(flags: ToolsFlags): Promise<number> {
  reportErrorsAsJson(flags.json === true);
  const config = loadConfig({ configPath: flags.config, onWarning: () => {} }, process.env);
  // MCP servers are connected to list their tools, then closed; one that is down is said on stderr.
  const mcp = mcpToolSources(mcpServersOf(config), { secrets: configuredSecrets(config), outputMaxChars: config.toolLimits.outputMaxChars });
  const catalog = new ToolCatalog(config, [], mcp);
  try {
    await catalog.start();
    // Read before close, which ends every connection.
    for (const status of mcp.map((source) => source.status())) {
      if (status && status.state !== 'up')
        process.stderr.write(`forkpool: MCP server "${status.name}" is ${status.state}: ${escapeForTerminal(status.lastError ?? '')}\n`);
      for (const refused of status?.refused ?? []) process.stderr.write(`forkpool: MCP server "${status?.name}" tool refused: ${escapeForTerminal(refused)}\n`);
    }
  } finally {
    await catalog.close();
  }
  const offered = new Set(config.tools);
  const entries = catalog.entries();
  if (flags.json) {
    const tools = entries.map((entry) => ({ ...describe(entry), offered: offered.has(entry.name) }));
    process.stdout.write(`${jsonForTerminal({ type: 'tools', tools })}\n`);
    return EXIT.ok;
  }
  const width = Math.max(...entries.map((entry) => entry.name.length));
  const lines = entries.map((entry) => {
    const marks = [entry.source, entry.gated ? 'gated' : '', offered.has(entry.name) ? 'offered' : ''].filter(Boolean).join(', ');
    const summary = entry.description.split('\n')[0] ?? '';
    return `${entry.name.padEnd(width)}  ${marks.padEnd(24)}  ${escapeForTerminal(summary.length > 100 ? `${summary.slice(0, 97)}...` : summary)}`;
  });
  process.stdout.write(`${lines.join('\n')}\n`);
  return EXIT.ok;
}

/** An entry as JSON: name, source, gated, description, its JSON Schema, and its module's file. */
function describe(entry: CatalogEntry) {
  return {
    name: entry.name,
    source: entry.source,
    gated: entry.gated,
    description: entry.description,
    parameters: entry.parameters,
    ...(entry.module ? { module: entry.module } : {}),
  };
}
