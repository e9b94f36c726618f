import type { FastifyInstance } from 'fastify';
import { ForkpoolError, errorMessage } from '../../shared/errors.js';
import type { JobWorktree } from '../../main/jobs/worktrees.js';
import { jobIdParams, worktreeActionBody } from '../schemas.js';
import { errorBody, worktreeActedBody, worktreeBody } from '../responses.js';
import { serve, type RouteDoc } from '../route-spec.js';
import type { ServerState } from '../server-state.js';

export const getJobWorktreeRoute = {
  method: 'get',
  path: '/v1/jobs/{id}/worktree',
  operationId: 'getJobWorktree',
  summary: 'A job spawned with workspace "worktree": its branch, base, state and (once ended) the files it changed.',
  params: jobIdParams,
  responses: {
    200: { description: 'The worktree', schema: worktreeBody },
    404: { description: 'No such job (JOB_UNKNOWN), or it has no worktree (NO_WORKTREE)', schema: errorBody },
  },
} satisfies RouteDoc;

export const actOnJobWorktreeRoute = {
  method: 'post',
  path: '/v1/jobs/{id}/worktree',
  operationId: 'actOnJobWorktree',
  summary: "Merge an ended worktree job's branch into the workspace (a conflict is aborted, nothing half-merged), keep it for review, or drop it.",
  params: jobIdParams,
  body: worktreeActionBody,
  responses: {
    200: { description: 'Done: what happened, and the worktree now', schema: worktreeActedBody },
    404: { description: 'No such job (JOB_UNKNOWN)', schema: errorBody },
    409: {
      description: 'Not possible now (WORKTREE_ACTION_FAILED: still running, no worktree, a merge conflict, already merged or dropped)',
      schema: errorBody,
    },
  },
} satisfies RouteDoc;

/**
 * `/v1/jobs/:id/worktree`: a `workspace: "worktree"` job's branch (GET), and the decision on it
 * (POST `{action: "merge" | "keep" | "drop"}`), as the parent's `background_worktree` tool and
 * `/bg worktree` make it (src/main/jobs/worktrees.ts). 404 for an unknown job; 409 when the
 * action cannot be done now (WORKTREE_ACTION_FAILED names why: running, a conflict...).
 */
export function worktreeRoutes(state: ServerState) {
  return async function plugin(app: FastifyInstance): Promise<void> {
    serve(app, getJobWorktreeRoute, async ({ params: { id } }, _request, reply) => {
      const job = state.manager.find(id);
      if (!job) return reply.code(404).send(refusal('JOB_UNKNOWN', `no job ${JSON.stringify(id)} (never started, or forgotten by retention)`));
      const tree = state.manager.parentControls.worktree(job.id);
      if (!tree) return reply.code(404).send(refusal('NO_WORKTREE', `job ${job.id} works in the shared workspace: it has no worktree`));
      return view(tree);
    });

    serve(app, actOnJobWorktreeRoute, async ({ params: { id }, body: { action } }, _request, reply) => {
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
