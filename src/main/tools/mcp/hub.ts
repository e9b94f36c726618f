/**
 * McpHub: the MCP servers of one manager, one connection each (never one per job or thread),
 * and their tools as public `ToolDefinition`s named `mcp__<server>__<tool>`, which run on the
 * main thread. A server that is down, hangs, crashes or misbehaves costs only its own calls a
 * tool error; the others carry on.
 */
import type { Logger } from 'pino';
import { DEFAULTS } from '../../../shared/defaults.js';
import { mcpSecrets, type McpServersConfig } from '../../../shared/mcp-config.js';
import { McpServerConnection, type McpServerStatus } from './connection.js';
import { loadMcpSdk, type McpSdk } from './sdk.js';
import { mcpToolName } from './tool-list.js';
import type { ToolDefinition } from '../../../shared/tool-contract.js';

export interface McpHubOptions {
  logger?: Logger | undefined;
  /** Redacted besides the servers' own `env` and `headers` values (which always are): e.g. `configuredSecrets(config)`. */
  secrets?: readonly string[];
  /** Characters of one answer, head and tail kept. Default: `toolLimits.outputMaxChars`'s default. */
  outputMaxChars?: number;
  /** How the SDK is loaded (tests: a missing package). Default: `import('@modelcontextprotocol/client')`. */
  loadSdk?: () => Promise<McpSdk>;
}

/** Room the hub's own call timeout leaves before a caller's (the tool contract's `timeoutMs`) fires. */
const CALL_TIMEOUT_MARGIN_MS = 1_000;

export class McpHub {
  #connections: McpServerConnection[] = [];
  readonly #listeners = new Set<(server: string) => void>();
  #tools: ToolDefinition[] = [];
  #closed = false;
  readonly #logger: Logger | undefined;
  #ready: Promise<void> = Promise.resolve();

  private constructor(logger: Logger | undefined) {
    this.#logger = logger;
  }

  /**
   * Connects every server (at once) and lists its tools. Resolves when each has connected or
   * failed; a failed one is retried with backoff and shows in `status()`. Rejects only when a
   * server is configured and the SDK is missing (PACKAGE_MISSING). No servers: no SDK loaded.
   */
  static async start(servers: McpServersConfig, options: McpHubOptions = {}): Promise<McpHub> {
    const hub = McpHub.open(servers, options);
    await hub.ready;
    return hub;
  }

  /** The hub at once, connecting in the background (`ready` tells when): `close()` may come before it has. */
  static open(servers: McpServersConfig, options: McpHubOptions = {}): McpHub {
    const hub = new McpHub(options.logger);
    hub.#ready = hub.#open(servers, options);
    return hub;
  }

  /** Settles when every server has connected or failed once; rejects as {@link start} does. */
  get ready(): Promise<void> {
    return this.#ready;
  }

  async #open(servers: McpServersConfig, options: McpHubOptions): Promise<void> {
    if (Object.keys(servers).length === 0) return;
    const sdk = await (options.loadSdk ?? loadMcpSdk)();
    if (this.#closed) return;
    const secrets = [...(options.secrets ?? []), ...mcpSecrets(servers)];
    this.#connections = Object.entries(servers).map(
      ([name, config]) =>
        new McpServerConnection(name, config, {
          sdk,
          secrets,
          logger: options.logger,
          outputMaxChars: options.outputMaxChars ?? DEFAULTS.tools.outputMaxChars,
          onToolsChanged: () => this.#rebuild(name),
        }),
    );
    await Promise.all(this.#connections.map((connection) => connection.start()));
    this.#rebuild(undefined);
  }

  /** The tools offered now, sorted by name. A new array on every change (see {@link onChange}). */
  tools(): ToolDefinition[] {
    return [...this.#tools];
  }

  /** The tools of one server (`mcp__<server>__*`) offered now. */
  toolsOf(server: string): ToolDefinition[] {
    const prefix = mcpToolName(server, '');
    return this.#tools.filter((t) => t.name.startsWith(prefix));
  }

  /** Calls `listener` with the server's name after its tools change (list_changed, a restart, the server down). Returns the unsubscribe. */
  onChange(listener: (server: string) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /** Each server's state, tool count, refused tools and last error (redacted: no secret). */
  status(): McpServerStatus[] {
    return this.#connections.map((connection) => connection.status());
  }

  /** Ends every connection (stdio servers' processes end). Idempotent. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#listeners.clear();
    await Promise.all(this.#connections.map((connection) => connection.close()));
    this.#tools = [];
  }

  /** Rebuilds the list; tells the listeners when `server`'s tools changed (not at start: `start` returns them). */
  #rebuild(server: string | undefined): void {
    if (this.#closed) return;
    const tools: ToolDefinition[] = [];
    for (const connection of this.#connections) {
      for (const tool of connection.tools) {
        tools.push({
          name: tool.name,
          description: tool.description,
          parameters: tool.parameters,
          gated: !connection.config.trusted,
          timeoutMs: connection.config.timeoutMs + CALL_TIMEOUT_MARGIN_MS,
          run: (args, ctx) => connection.call(tool, args, ctx),
        });
      }
    }
    tools.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    this.#tools = tools;
    if (server === undefined) return;
    for (const listener of this.#listeners) {
      try {
        listener(server);
      } catch (error) {
        // A listener's bug must not stop the others, nor the connection that called us.
        this.#logger?.error({ err: error }, 'mcp: a tools change listener threw');
      }
    }
  }
}
