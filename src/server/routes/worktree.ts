import type { FastifyInstance } from 'fastify';
import { ForkpoolError, errorMessage } from '../../shared/errors.js';
import type { JobWorktree } from '../../main/jobs/worktrees.js';
import { jobIdParams, parseRequest, worktreeActionBody } from '../schemas.js';
import type { ServerState } from '../server-state.js';

/**
 * `/v1/jobs/:id/worktree`: a `workspace: "worktree"` job's branch (GET), and the decision on it
 * (POST `{action: "merge" | "keep" | "drop"}`), as the parent's `background_worktree` tool and
 * `/bg worktree` make it (src/main/jobs/worktrees.ts). 404 for an unknown job; 409 when the
 * action cannot be done now (WORKTREE_ACTION_FAILED names why: running, a conflict...).
 */
export function worktreeRoutes(state: ServerState) {
  return async function plugin(app: FastifyInstance): Promise<void> {
    app.get('/v1/jobs/:id/worktree', async (request, reply) => {
      const { id } = parseRequest(jobIdParams, request.params, 'params');
      const job = state.manager.find(id);
      if (!job) return reply.code(404).send(refusal('JOB_UNKNOWN', `no job ${JSON.stringify(id)} (never started, or forgotten by retention)`));
      const tree = state.manager.parentControls.worktree(job.id);
      if (!tree) return reply.code(404).send(refusal('NO_WORKTREE', `job ${job.id} works in the shared workspace: it has no worktree`));
      return view(tree);
    });

    app.post('/v1/jobs/:id/worktree', async (request, reply) => {
      const { id } = parseRequest(jobIdParams, request.params, 'params');
      const { action } = parseRequest(worktreeActionBody, request.body, 'body');
      const job = state.manager.find(id);
      if (!job) return reply.code(404).send(refusal('JOB_UNKNOWN', `no job ${JSON.stringify(id)} (never started, or forgotten by retention)`));
      try {
        const message = await state.manager.parentControls.worktreeAction(job.id, action);
        return { message, worktree: view(state.manager.parentControls.worktree(job.id) as JobWorktree) };
      } catch (error) {
        const code = error instanceof ForkpoolError ? error.code : 'INTERNAL';
        return reply.code(code === 'INTERNAL' ? 500 : 409).send(refusal(code, errorMessage(error)));
      }
    });
  };
}

/** What the API shows of a worktree: not its folders on the server's disk. */
function view(tree: Readonly<JobWorktree>) {
  return { jobId: tree.jobId, branch: tree.branch, base: tree.base, state: tree.state, ...(tree.changed ? { changed: [...tree.changed] } : {}) };
}

function refusal(code: string, message: string) {
  return { error: { code, message } };
}
