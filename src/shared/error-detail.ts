import type { SerializedError } from './errors.js';

/** How much of a job's error its record keeps: `brief` for callers, `debug` for whoever debugs forkpool. */
export type ErrorDetail = 'brief' | 'debug';

/** Causes kept under `brief`: enough to say why, not a trace. */
const BRIEF_CAUSE_DEPTH = 2;

/**
 * The error a caller sees in `record.error`: code, message and a short cause chain. Stacks
 * and absolute paths (the workspace's, the install's) are kept only at `debug`: they tell a
 * caller nothing it can act on and they leak the machine's layout into responses and logs.
 */
export function errorForRecord(error: SerializedError, detail: ErrorDetail, workspaceRoot: string, depth = 0): SerializedError {
  if (detail === 'debug') return error;
  const { stack: _stack, cause, ...rest } = error;
  const brief: SerializedError = { ...rest, message: withoutAbsolutePaths(error.message, workspaceRoot) };
  if (cause && depth < BRIEF_CAUSE_DEPTH) brief.cause = errorForRecord(cause, detail, workspaceRoot, depth + 1);
  return brief;
}

/** Paths inside the workspace become relative (`./src/a.ts`); other absolute paths become `<path>`. */
export function withoutAbsolutePaths(message: string, workspaceRoot: string): string {
  const root = workspaceRoot.replace(/\/+$/, '');
  let out = root.length > 1 ? message.split(`${root}/`).join('./').split(root).join('.') : message;
  // Filesystem paths under the usual roots, and file:// URLs. URL paths ("POST /v1/chat/completions")
  // look the same but say what went wrong, so only these roots are hidden.
  out = out.replace(/file:\/\/\/[^\s)'"]*/g, '<path>');
  out = out.replace(/(?<![\w.~/-])\/(?:home|Users|root|tmp|var|usr|opt|srv|mnt|etc|work|private|nix|proc|run)\/[\w.@+/-]*/g, '<path>');
  return out;
}
