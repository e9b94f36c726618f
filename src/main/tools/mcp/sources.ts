/**
 * The config's MCP servers as the catalog's tool sources (src/main/tools/catalog.ts): one
 * `mcp:<server>` source per server, all backed by one McpHub, so a manager holds one
 * connection per server however many jobs, threads or agents use it.
 */
import type { ForkpoolConfig } from '../../../shared/config.js';
import { ConfigError, type ConfigIssue } from '../../../shared/errors.js';
import type { McpServerConfig, McpServersConfig } from '../../../shared/mcp-config.js';
import type { ToolSource } from '../catalog.js';
import type { McpServerStatus } from './connection.js';
import { McpHub, type McpHubOptions } from './hub.js';
import { mcpToolName } from './tool-list.js';

/**
 * Every server the config names: the top-level ones and each agent's (an agent's servers start
 * with the manager like the others; its `tools` name their tools). The same name twice with two
 * different settings is a ConfigError naming both fields.
 */
export function mcpServersOf(config: Pick<ForkpoolConfig, 'mcpServers' | 'agents'>): McpServersConfig {
  const servers: Record<string, McpServerConfig> = { ...config.mcpServers };
  const whereFrom: Record<string, string> = Object.fromEntries(Object.keys(servers).map((name) => [name, `mcpServers.${name}`]));
  const issues: ConfigIssue[] = [];
  for (const [agent, entry] of Object.entries(config.agents)) {
    for (const [name, server] of Object.entries(entry.mcpServers ?? {})) {
      const field = `agents.${agent}.mcpServers.${name}`;
      const held = servers[name];
      if (held !== undefined && JSON.stringify(held) !== JSON.stringify(server)) {
        issues.push({ field, expected: `the same settings as "${whereFrom[name]}" (one server per name), or another name`, received: 'different settings' });
        continue;
      }
      servers[name] = server;
      whereFrom[name] ??= field;
    }
  }
  if (issues.length > 0) throw new ConfigError(issues);
  return servers;
}

/**
 * One source per server, sharing one hub opened on the first `start()`; closing any closes the
 * hub at once, even mid-connect (a server that never answers its handshake does not hold it up).
 */
export interface McpToolSource extends ToolSource {
  /** Its server's state, tools, refusals and last error (no secret); undefined before `start()`. */
  status(): McpServerStatus | undefined;
}

export function mcpToolSources(servers: McpServersConfig, options: McpHubOptions): McpToolSource[] {
  let opened: McpHub | undefined;
  let hub: Promise<McpHub> | undefined;
  const started = () =>
    (hub ??= (async () => {
      opened = McpHub.open(servers, options);
      await opened.ready;
      return opened;
    })());
  return Object.keys(servers).map((server) => {
    const prefix = mcpToolName(server, '');
    return {
      source: `mcp:${server}` as const,
      start: async () => (await started()).toolsOf(server),
      onChange: (listener) => {
        void started().then(
          (h) => h.onChange((changed) => changed === server && listener(h.toolsOf(server))),
          // start() reports the failure to its caller.
          () => {},
        );
      },
      claims: (name) => name.startsWith(prefix),
      status: () => opened?.status().find((status) => status.name === server),
      close: async () => {
        await opened?.close();
      },
    };
  });
}
