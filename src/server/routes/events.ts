import type { ServerResponse } from 'node:http';
import type { FastifyInstance } from 'fastify';
import type { HubEvent } from '../event-hub.js';
import type { ServerState } from '../server-state.js';
import { textBody } from '../responses.js';
import { serve, type RouteDoc } from '../route-spec.js';

/** A comment line every so often keeps proxies from closing a quiet stream. */
const HEARTBEAT_MS = 15_000;
/** How long the browser waits before reconnecting (the `retry:` field). */
const RETRY_MS = 1_000;

export const streamEventsRoute = {
  method: 'get',
  path: '/v1/events',
  operationId: 'streamEvents',
  summary:
    'Server-Sent Events: spawned, started, progress, alert, done, requeued, delivered, wave-done, approval-requested, approval-resolved, sleeping; Last-Event-ID resumes; reset means refetch.',
  responses: { 200: { description: 'The event stream (`id:`, `event:`, `data:` JSON)', schema: textBody, contentType: 'text/event-stream' } },
} satisfies RouteDoc;

/**
 * `GET /v1/events`: Server-Sent Events from the hub. A client that reconnects sends
 * `Last-Event-ID` (browsers do it by themselves) and gets the events it missed from the
 * bounded buffer; when the buffer no longer reaches back that far it gets one `reset`
 * event and should refetch `/v1/jobs`.
 */
export function eventRoutes(state: ServerState, open: Set<ServerResponse>) {
  return async function plugin(app: FastifyInstance): Promise<void> {
    serve(app, streamEventsRoute, async (_input, request, reply) => {
      const header = request.headers['last-event-id'];
      const query = request.query as Record<string, unknown>;
      const raw = typeof header === 'string' ? header : typeof query.lastEventId === 'string' ? query.lastEventId : undefined;
      const lastSeen = raw !== undefined && /^\d+$/.test(raw) ? Number(raw) : undefined;

      reply.hijack();
      const out = reply.raw;
      out.writeHead(200, {
        'content-type': 'text/event-stream; charset=utf-8',
        'cache-control': 'no-store',
        connection: 'keep-alive',
        'x-accel-buffering': 'no',
      });
      out.write(`retry: ${RETRY_MS}\n: forkpool events, last id ${state.hub.lastId}\n\n`);
      const send = (event: HubEvent) => {
        if (!out.writableEnded) out.write(`id: ${event.id}\nevent: ${event.type}\ndata: ${state.scrub(JSON.stringify(event.data))}\n\n`);
      };
      if (lastSeen !== undefined) {
        const { events, complete } = state.hub.since(lastSeen);
        if (!complete) send({ id: state.hub.lastId, type: 'reset', data: { reason: `events after ${lastSeen} are no longer buffered; refetch /v1/jobs` } });
        else events.forEach(send);
      }
      const unsubscribe = state.hub.subscribe(send);
      const heartbeat = setInterval(() => out.write(': keep-alive\n\n'), HEARTBEAT_MS);
      heartbeat.unref();
      open.add(out);
      out.once('close', () => {
        unsubscribe();
        clearInterval(heartbeat);
        open.delete(out);
      });
    });
  };
}
