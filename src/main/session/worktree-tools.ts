import { z } from 'zod';
import type { ToolDefinition } from '../../shared/tools/types.js';
import type { BackgroundManager } from '../jobs/manager.js';
import { WORKTREE_ACTIONS } from '../jobs/worktrees.js';
import { asToolError } from './background-tools.js';

const worktreeArgs = z.strictObject({
  job: z.string().trim().min(1).max(100).describe('The job id (e.g. "bg-3") or name of an ended job that ran with workspace "worktree".'),
  action: z
    .enum(WORKTREE_ACTIONS)
    .describe(
      '"merge": merge its branch into your workspace (a conflict is aborted, nothing half-merged); "keep": leave branch and worktree for review; "drop": delete both.',
    ),
});

/** `background_worktree`: the parent's decision on a worktree job's branch (see src/main/jobs/worktrees.ts). */
export function worktreeTool(manager: Pick<BackgroundManager, 'worktreeAction'>): ToolDefinition<z.output<typeof worktreeArgs>> {
  return {
    name: 'background_worktree',
    description:
      'Merge, keep or drop the git branch of an ended background job that ran in its own worktree (spawned with workspace "worktree"). ' +
      'Its result listed the branch and the files it changed.',
    parameters: worktreeArgs,
    gated: false,
    async run(args) {
      try {
        return await manager.worktreeAction(args.job, args.action);
      } catch (error) {
        throw asToolError(error, 'background_worktree');
      }
    },
  };
}
