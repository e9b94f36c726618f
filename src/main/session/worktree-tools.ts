import { z } from 'zod';
import type { ToolDefinition } from '../../shared/tools/types.js';
import type { ParentControls } from '../jobs/manager.js';
import { WORKTREE_ACTIONS } from '../jobs/worktrees.js';
import { asToolError } from './background-tools.js';

const worktreeArgs = z.strictObject({
  job: z.string().trim().min(1).max(100),
  action: z.enum(WORKTREE_ACTIONS),
});

/** `background_worktree`: the parent's decision on a worktree job's branch (see src/main/jobs/worktrees.ts). */
export function worktreeTool(controls: Pick<ParentControls, 'worktreeAction'>): ToolDefinition<z.output<typeof worktreeArgs>> {
  return {
    name: 'background_worktree',
    description: 'Merge (conflicts abort), keep or drop the branch of an ended job run with workspace "worktree".',
    parameters: worktreeArgs,
    gated: false,
    async run(args) {
      try {
        return await controls.worktreeAction(args.job, args.action);
      } catch (error) {
        throw asToolError(error, 'background_worktree');
      }
    },
  };
}
