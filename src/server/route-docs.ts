import { answerApprovalRoute, listApprovalsRoute } from './routes/approvals.js';
import { cancelJobsRoute } from './routes/bulk-cancel.js';
import { streamEventsRoute } from './routes/events.js';
import { cancelJobRoute, createJobsRoute, getJobResultRoute, getJobRoute, listJobsRoute } from './routes/jobs.js';
import { sendJobMessageRoute } from './routes/messages.js';
import { restartJobRoute } from './routes/restart.js';
import { resumeJobRoute } from './routes/resume.js';
import { createSessionRoute, getSessionRoute, sendSessionMessageRoute } from './routes/sessions.js';
import { PAGE_ROUTES, getHealthRoute, getMetricsRoute, getOpenApiRoute } from './routes/system.js';
import { getJobTranscriptRoute } from './routes/transcript.js';
import { waitForJobsRoute } from './routes/waits.js';
import { actOnJobWorktreeRoute, getJobWorktreeRoute } from './routes/worktree.js';
import type { RouteDoc } from './route-spec.js';

export type { ResponseDoc, RouteDoc } from './route-spec.js';
export { responsesOf } from './route-spec.js';
export { PAGE_ROUTES };

/**
 * Every route of the API, in the document's order. Each is declared once, beside its handler
 * (routes/*.ts, registered with `serve`): its prose, the zod schemas its request is parsed with
 * and its responses. A new route is served with `serve` and listed here;
 * test/server/openapi-contract.test.ts fails for a route the plugin registers without an entry.
 */
export const ROUTE_DOCS: readonly RouteDoc[] = [
  createJobsRoute,
  listJobsRoute,
  getJobRoute,
  cancelJobRoute,
  getJobResultRoute,
  getJobTranscriptRoute,
  sendJobMessageRoute,
  waitForJobsRoute,
  createSessionRoute,
  getSessionRoute,
  sendSessionMessageRoute,
  resumeJobRoute,
  restartJobRoute,
  cancelJobsRoute,
  getJobWorktreeRoute,
  actOnJobWorktreeRoute,
  listApprovalsRoute,
  answerApprovalRoute,
  streamEventsRoute,
  getHealthRoute,
  getMetricsRoute,
  getOpenApiRoute,
];
