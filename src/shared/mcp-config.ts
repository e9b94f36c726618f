/**
 * The `mcpServers` config field (top level and per agent): MCP servers whose tools join a job's
 * catalog as `mcp__<server>__<tool>`. Plain data (the config is cloned into workers); the
 * connections themselves live on the main thread (src/main/tools/mcp). Every `env` and
 * `headers` value is a secret: see {@link mcpSecrets}.
 */
import { z } from 'zod';

/** A server name: it becomes part of each tool name (`mcp__<server>__<tool>`, at most 64 characters). */
export const MCP_SERVER_NAME_PATTERN = /^[a-zA-Z0-9_-]{1,32}$/;

/** The longest call timeout a server may set (one hour). */
export const MAX_MCP_TIMEOUT_MS = 3_600_000;
/** Default for `timeoutMs`: one tool call, sent to answered. */
export const DEFAULT_MCP_TIMEOUT_MS = 60_000;

const shared = {
  /** Its tools run without a permission check (otherwise gated like `bash`: `grantedTools` must name them). Default false. */
  trusted: z.boolean().default(false),
  /** One tool call, sent to answered; past it the call is a TOOL_TIMEOUT tool error. Default 60,000. */
  timeoutMs: z.number().int().min(100).max(MAX_MCP_TIMEOUT_MS).default(DEFAULT_MCP_TIMEOUT_MS),
};

/** A server the manager starts as a child process and talks to over its stdin/stdout. */
export const mcpStdioServerSchema = z.strictObject({
  command: z.string().min(1),
  args: z.array(z.string()).default([]),
  /** Added to a minimal environment (PATH, HOME, USER, SHELL, TERM, LOGNAME): forkpool's own keys are not passed. Secret: never logged or shown to a model. */
  env: z.record(z.string().min(1), z.string()).default({}),
  /** Working folder of the process; unset: the manager's. */
  cwd: z.string().min(1).optional(),
  ...shared,
});

/** A server reached over streamable HTTP. */
export const mcpHttpServerSchema = z.strictObject({
  url: z.url({ protocol: /^https?$/ }),
  /** Sent with every request (e.g. `Authorization`). Secret: never logged or shown to a model. */
  headers: z.record(z.string().min(1), z.string()).default({}),
  ...shared,
});

export const mcpServerSchema = z.union([mcpStdioServerSchema, mcpHttpServerSchema]);

/** `mcpServers`: server name → how to reach it. */
export const mcpServersSchema = z.record(z.string().regex(MCP_SERVER_NAME_PATTERN, 'a server name: letters, digits, "_" or "-" (1 to 32)'), mcpServerSchema);

export type McpStdioServerConfig = z.output<typeof mcpStdioServerSchema>;
export type McpHttpServerConfig = z.output<typeof mcpHttpServerSchema>;
export type McpServerConfig = z.output<typeof mcpServerSchema>;
export type McpServersConfig = z.output<typeof mcpServersSchema>;

/**
 * Every secret the servers' config holds: each `env` and `headers` value, and a password in a
 * URL. Redaction drops values shorter than 4 characters itself (too many false hits).
 */
export function mcpSecrets(servers: Readonly<Record<string, McpServerConfig>> | undefined): string[] {
  const out: string[] = [];
  for (const server of Object.values(servers ?? {})) {
    if ('command' in server) out.push(...Object.values(server.env));
    else {
      for (const value of Object.values(server.headers)) {
        out.push(value);
        // `Bearer <token>`: the token alone too, as a server may echo it without the scheme.
        const token = value.split(' ').pop();
        if (token !== undefined && token !== value) out.push(token);
      }
      try {
        const url = new URL(server.url);
        if (url.password) out.push(decodeURIComponent(url.password));
        if (url.username) out.push(decodeURIComponent(url.username));
      } catch {
        // The schema checked it already.
      }
    }
  }
  return [...new Set(out)];
}
