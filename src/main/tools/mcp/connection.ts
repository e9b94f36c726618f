/**
 * One MCP server's connection, for the life of a hub: connect (a stdio server is a child
 * process this object owns), list its tools, refresh them on `notifications/tools/list_changed`,
 * call them with a timeout and the caller's signal, restart with backoff when the connection
 * is lost, end it on close. The only owner of the server's state; the hub reads it.
 */
import type { Logger } from 'pino';
import { AbortError, ToolError } from '../../../shared/errors.js';
import type { McpServerConfig } from '../../../shared/mcp-config.js';
import { redactSecrets } from '../../../shared/tools/secrets.js';
import { boundedFetch } from './bounded-fetch.js';
import { answerText, type CallAnswer } from './call-result.js';
import { MCP_LIMITS } from './limits.js';
import type { McpClient, McpSdk } from './sdk.js';
import { checkToolList, type AcceptedTool, type ListedTool } from './tool-list.js';
import type { ToolCallContext } from '../../../shared/tool-contract.js';

/** `starting`: first connect under way; `restarting`: lost or failed, a retry is scheduled; `down`: retries used up. */
export type McpServerState = 'starting' | 'up' | 'restarting' | 'down' | 'closed';

/** What `McpHub.status()` shows of one server. Never holds a secret (errors are redacted). */
export interface McpServerStatus {
  name: string;
  transport: 'stdio' | 'http';
  state: McpServerState;
  trusted: boolean;
  /** Tools offered now. */
  tools: number;
  /** Tools the server listed that the hub refused, each with why (a 10,000-property schema, a bad name). */
  refused: string[];
  /** Restarts so far. */
  restarts: number;
  /** The last connect or connection error, with the end of a stdio server's stderr. */
  lastError?: string;
}

export interface ConnectionOptions {
  sdk: McpSdk;
  /** Redacted from every answer, description, schema, error and log line. */
  secrets: readonly string[];
  logger?: Logger | undefined;
  /** Characters of one answer (head and tail kept). */
  outputMaxChars: number;
  /** Called when the offered tools change (listed, refreshed, or dropped when the server is down). */
  onToolsChanged: () => void;
}

export class McpServerConnection {
  readonly name: string;
  readonly config: McpServerConfig;
  readonly #options: ConnectionOptions;
  /** The live client; undefined while not connected. A callback from an older client compares against it and is ignored. */
  #client: McpClient | undefined;
  #state: McpServerState = 'starting';
  #lastError: string | undefined;
  #tools: readonly AcceptedTool[] = [];
  #refused: string[] = [];
  #restarts = 0;
  /** Failed connects or losses in a row (the backoff's exponent). */
  #attempts = 0;
  #upSince = 0;
  #restartTimer: NodeJS.Timeout | undefined;
  #refreshing = false;
  #refreshAgain = false;
  #stderrTail = '';

  constructor(name: string, config: McpServerConfig, options: ConnectionOptions) {
    this.name = name;
    this.config = config;
    this.#options = options;
  }

  get tools(): readonly AcceptedTool[] {
    return this.#tools;
  }

  status(): McpServerStatus {
    return {
      name: this.name,
      transport: 'command' in this.config ? 'stdio' : 'http',
      state: this.#state,
      trusted: this.config.trusted,
      tools: this.#tools.length,
      refused: [...this.#refused],
      restarts: this.#restarts,
      ...(this.#lastError === undefined ? {} : { lastError: this.#lastError }),
    };
  }

  /** The first connect. Never rejects: a failure is the status' `lastError`, and a retry is scheduled. */
  async start(): Promise<void> {
    await this.#connect();
  }

  /** Calls `tool` with `args`; every failure is a ToolError (or an AbortError when `ctx.signal` stopped it). */
  async call(tool: AcceptedTool, args: unknown, ctx: ToolCallContext): Promise<string> {
    if (ctx.signal.aborted) throw new AbortError(ctx.signal.reason);
    const client = this.#client;
    if (client === undefined || this.#state !== 'up') {
      throw new ToolError(
        'TOOL_FAILED',
        tool.name,
        `MCP server "${this.name}" is ${this.#state}${this.#lastError ? ` (${this.#lastError})` : ''}: "${tool.mcpName}" was not called`,
      );
    }
    const { timeoutMs } = this.config;
    const timeout = new AbortController();
    const timer = setTimeout(() => timeout.abort(), timeoutMs);
    try {
      const argumentsObject = typeof args === 'object' && args !== null && !Array.isArray(args) ? (args as Record<string, unknown>) : {};
      // The SDK's own timeout is a backstop a little later: ours gives the clearer error.
      const answer: CallAnswer = await client.callTool(
        { name: tool.mcpName, arguments: argumentsObject },
        { signal: AbortSignal.any([ctx.signal, timeout.signal]), timeout: timeoutMs + 1_000 },
      );
      const text = answerText(answer, this.#options.outputMaxChars, this.#options.secrets);
      if (answer.isError === true) throw new ToolError('TOOL_FAILED', tool.name, `MCP tool "${tool.mcpName}" on server "${this.name}" failed: ${text}`);
      return text;
    } catch (error) {
      if (error instanceof ToolError) throw error;
      if (ctx.signal.aborted) throw new AbortError(ctx.signal.reason);
      const code = (error as { code?: unknown } | null)?.code;
      if (timeout.signal.aborted || code === 'REQUEST_TIMEOUT') {
        throw new ToolError('TOOL_TIMEOUT', tool.name, `MCP server "${this.name}" did not answer "${tool.mcpName}" within ${timeoutMs} ms`);
      }
      if (client !== this.#client || code === 'CONNECTION_CLOSED') {
        throw new ToolError('TOOL_FAILED', tool.name, `MCP server "${this.name}" closed the connection during "${tool.mcpName}"; it is being restarted`);
      }
      const reason = this.#redacted(error);
      // A JSON-RPC error (a numeric code) is the server's answer. Anything else over HTTP (no
      // answer, a dropped session) means the server went away: reconnect, as a stdio exit does.
      if (typeof code !== 'number' && !('command' in this.config)) {
        this.#lost(client, `a call failed without an answer: ${reason}`);
        void client.close().catch(() => {});
      }
      throw new ToolError('TOOL_FAILED', tool.name, `MCP server "${this.name}" failed "${tool.mcpName}": ${reason}`);
    } finally {
      clearTimeout(timer);
    }
  }

  /** Ends the connection (and a stdio server's process); no restart after it. */
  async close(): Promise<void> {
    this.#state = 'closed';
    clearTimeout(this.#restartTimer);
    const client = this.#client;
    this.#client = undefined;
    await client?.close().catch(() => {});
  }

  async #connect(): Promise<void> {
    if (this.#state === 'closed') return;
    const { sdk } = this.#options;
    const client = new sdk.Client({ name: 'forkpool', version: '1' }, { capabilities: {} });
    this.#client = client;
    // Set before connect: a process that exits during the handshake is a loss like any other.
    client.onclose = () => this.#lost(client, 'the connection closed');
    client.onerror = (error) => this.#options.logger?.debug({ server: this.name, error: this.#redacted(error) }, 'mcp: connection error');
    client.setNotificationHandler('notifications/tools/list_changed', () => this.#requestRefresh(client));
    try {
      await client.connect(this.#transport(), { timeout: MCP_LIMITS.connectTimeoutMs });
      const listed = await this.#list(client);
      if (client !== this.#client) return;
      this.#state = 'up';
      this.#upSince = Date.now();
      this.#lastError = undefined;
      this.#setTools(listed);
      this.#options.logger?.info({ server: this.name, tools: this.#tools.length, refused: this.#refused.length }, 'mcp: server up');
    } catch (error) {
      if (client !== this.#client) return;
      this.#client = undefined;
      void client.close().catch(() => {});
      this.#scheduleRestart(`could not connect: ${this.#redacted(error)}`);
    }
  }

  #transport() {
    const { sdk } = this.#options;
    const config = this.config;
    if (!('command' in config)) {
      return new sdk.StreamableHTTPClientTransport(new URL(config.url), {
        requestInit: { headers: config.headers },
        fetch: boundedFetch(MCP_LIMITS.maxMessageBytes),
      });
    }
    const transport = new sdk.StdioClientTransport({
      command: config.command,
      args: config.args,
      env: config.env,
      ...(config.cwd === undefined ? {} : { cwd: config.cwd }),
      // Piped, never inherited: a server's stderr may hold its secrets; the end is kept (redacted) for the status.
      stderr: 'pipe',
      maxBufferSize: MCP_LIMITS.maxMessageBytes,
    });
    transport.stderr?.on('data', (chunk: Buffer) => {
      this.#stderrTail = (this.#stderrTail + chunk.toString('utf8')).slice(-MCP_LIMITS.stderrTailChars);
    });
    return transport;
  }

  async #list(client: McpClient): Promise<ListedTool[]> {
    // cacheMode 'refresh': the SDK keeps its own copy of the list; a list_changed must read the server's.
    const answer = await client.listTools(undefined, { timeout: MCP_LIMITS.listTimeoutMs, cacheMode: 'refresh' });
    return answer.tools;
  }

  #setTools(listed: readonly ListedTool[]): void {
    const checked = checkToolList(this.name, listed, this.#options.secrets);
    const changed = JSON.stringify(checked.accepted) !== JSON.stringify(this.#tools);
    if (JSON.stringify(checked.refused) !== JSON.stringify(this.#refused) && checked.refused.length > 0) {
      this.#options.logger?.warn({ server: this.name, refused: checked.refused }, 'mcp: tools refused');
    }
    this.#tools = checked.accepted;
    this.#refused = checked.refused;
    if (changed) this.#options.onToolsChanged();
  }

  /**
   * A `list_changed` notification: one refresh runs at a time, at most one more is pending,
   * and refreshes are at least `refreshMinIntervalMs` apart, however many notifications come.
   */
  #requestRefresh(client: McpClient): void {
    if (client !== this.#client) return;
    if (this.#refreshing) {
      this.#refreshAgain = true;
      return;
    }
    this.#refreshing = true;
    void this.#refreshLoop(client);
  }

  async #refreshLoop(client: McpClient): Promise<void> {
    try {
      do {
        this.#refreshAgain = false;
        try {
          const listed = await this.#list(client);
          if (client === this.#client && this.#state === 'up') this.#setTools(listed);
        } catch (error) {
          this.#options.logger?.warn({ server: this.name, error: this.#redacted(error) }, 'mcp: tools/list after list_changed failed');
        }
        await new Promise((resolve) => setTimeout(resolve, MCP_LIMITS.refreshMinIntervalMs).unref());
      } while (this.#refreshAgain && client === this.#client);
    } finally {
      this.#refreshing = false;
    }
  }

  /** The live connection ended without close(): restart it. */
  #lost(client: McpClient, reason: string): void {
    if (client !== this.#client) return;
    this.#client = undefined;
    // A connection that stayed up a while starts the backoff over.
    if (this.#upSince > 0 && Date.now() - this.#upSince >= MCP_LIMITS.stableAfterMs) this.#attempts = 0;
    this.#scheduleRestart(reason);
  }

  #scheduleRestart(reason: string): void {
    if (this.#state === 'closed') return;
    const stderr = this.#stderrTail.trim();
    this.#lastError = redactSecrets(`${reason}${stderr ? `; stderr: ${stderr}` : ''}`, this.#options.secrets).slice(-MCP_LIMITS.errorMaxChars);
    this.#stderrTail = '';
    this.#attempts += 1;
    if (this.#attempts > MCP_LIMITS.maxRestartAttempts) {
      this.#state = 'down';
      this.#options.logger?.warn({ server: this.name, error: this.#lastError }, 'mcp: server down, no more restarts');
      if (this.#tools.length > 0) {
        this.#tools = [];
        this.#options.onToolsChanged();
      }
      return;
    }
    this.#state = 'restarting';
    // Exponential with jitter (half to all of the step), capped.
    const step = Math.min(MCP_LIMITS.restartMaxMs, MCP_LIMITS.restartBaseMs * 2 ** (this.#attempts - 1));
    const delay = Math.round(step / 2 + (Math.random() * step) / 2);
    // One warning when the server is lost (and one when it is given up): each further retry is
    // debug, so a server that stays down does not fill a chat's or a server's stderr.
    const log = this.#options.logger;
    if (this.#attempts === 1) log?.warn({ server: this.name, error: this.#lastError, retryInMs: delay }, 'mcp: server lost, restarting');
    else log?.debug({ server: this.name, error: this.#lastError, retryInMs: delay, attempt: this.#attempts }, 'mcp: server lost, restarting');
    this.#restartTimer = setTimeout(() => {
      this.#restartTimer = undefined;
      this.#restarts += 1;
      void this.#connect();
    }, delay);
    this.#restartTimer.unref();
  }

  #redacted(error: unknown): string {
    const message = error instanceof Error ? error.message : String(error);
    return redactSecrets(message, this.#options.secrets).slice(0, MCP_LIMITS.errorMaxChars);
  }
}
