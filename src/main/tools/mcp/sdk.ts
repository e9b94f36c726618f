/**
 * The MCP client SDK (`@modelcontextprotocol/client`, an optional peer dependency), imported
 * only when a config names a server. Missing: PACKAGE_MISSING naming it and the install command.
 */
import type { Client } from '@modelcontextprotocol/client';
import type { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import type { StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { loadOptional } from '../../executors/optional-package.js';

export interface McpSdk {
  Client: typeof Client;
  StdioClientTransport: typeof StdioClientTransport;
  StreamableHTTPClientTransport: typeof StreamableHTTPClientTransport;
}

export type McpClient = Client;

/** Imports the SDK (once per process: `import()` caches it). */
export async function loadMcpSdk(): Promise<McpSdk> {
  return loadOptional('MCP servers (config "mcpServers")', ['@modelcontextprotocol/client'], async () => {
    const [main, stdio] = await Promise.all([import('@modelcontextprotocol/client'), import('@modelcontextprotocol/client/stdio')]);
    return { Client: main.Client, StdioClientTransport: stdio.StdioClientTransport, StreamableHTTPClientTransport: main.StreamableHTTPClientTransport };
  });
}
