/** Permission gates and tool contexts for calling the tool loop or tools directly. */
import type { ForkpoolConfig } from '../../src/shared/config.js';
import type { PermissionGate, PermissionRequest, ToolContext } from '../../src/shared/tools/types.js';

/** A gate that records every request and answers with `allow`. */
export function recordingGate(allow: boolean): PermissionGate & { requests: PermissionRequest[] } {
  const requests: PermissionRequest[] = [];
  return {
    requests,
    check: async (request) => {
      requests.push(request);
      return allow;
    },
  };
}

export const allowGate = (): PermissionGate => recordingGate(true);
export const denyGate = (): PermissionGate => recordingGate(false);

/** The `toolContext` for `runToolLoop` from a config: its workspace and limits, an empty env. */
export function toolContextFor(config: ForkpoolConfig, permissions: PermissionGate = denyGate()): Omit<ToolContext, 'signal'> {
  return { workspaceRoot: config.workspaceRoot, limits: config.toolLimits, permissions, env: { PATH: process.env.PATH ?? '/usr/bin:/bin' } };
}
