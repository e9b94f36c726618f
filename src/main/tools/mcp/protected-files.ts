/**
 * A stdio MCP server's program inside the workspace is code the manager runs on the host,
 * outside any sandbox, and runs again at every restart: a job's write tools must not change it
 * (a job could plant code, then crash the server to have it run). Each file its `command` or
 * `args` name that exists inside the workspace becomes a protected path (write_file and
 * edit_file refuse it; bash in the sandbox sees it read-only). Files it imports are not known
 * here: keep them outside the workspace, or protect them.
 */
import { statSync } from 'node:fs';
import path from 'node:path';
import type { ForkpoolConfig } from '../../../shared/config.js';
import { mcpServersOf } from './sources.js';

/** `config` with the workspace files its stdio MCP servers run added to `protectedPaths`. */
export function withProtectedMcpFiles<C extends Pick<ForkpoolConfig, 'mcpServers' | 'agents' | 'workspaceRoot' | 'protectedPaths'>>(config: C, cwd: string): C {
  const files: string[] = [];
  for (const server of Object.values(mcpServersOf(config))) {
    if (!('command' in server)) continue;
    const base = server.cwd === undefined ? cwd : path.resolve(cwd, server.cwd);
    for (const word of [server.command, ...server.args]) {
      const file = path.resolve(base, word);
      const rel = path.relative(config.workspaceRoot, file);
      if (rel === '' || rel.startsWith('..') || path.isAbsolute(rel) || !isFile(file)) continue;
      files.push(rel.split(path.sep).join('/'));
    }
  }
  if (files.length === 0) return config;
  return { ...config, protectedPaths: [...new Set([...config.protectedPaths, ...files])] };
}

function isFile(file: string): boolean {
  try {
    return statSync(file).isFile();
  } catch {
    return false;
  }
}
