import { z } from 'zod';
import { STOP_REASONS } from '../shared/loop-events.js';
import { jobSummarySchema, named, serializedError, usageByModel } from './responses.js';

// The bodies of the session routes (/v1/sessions): a session, and the lines of a turn's stream.

export const sessionCreatedBody = named('SessionCreated', z.object({ id: z.string() }));
export const sessionBody = named('Session', z.object({ id: z.string(), turns: z.number(), busy: z.boolean(), jobs: z.array(jobSummarySchema) }));

/** One line of a turn's NDJSON stream: its events as they happen, then its result (or an error). */
export const sessionTurnLine = named(
  'SessionTurnLine',
  z.discriminatedUnion('type', [
    z.object({
      type: z.literal('parent'),
      event: z.looseObject({ type: z.enum(['turn_start', 'loop', 'turn_end']), turn: z.number() }).describe('A parent event (docs/server.md).'),
    }),
    z.object({
      type: z.literal('result'),
      result: z.object({ turn: z.number(), answer: z.string(), stopReason: z.enum(STOP_REASONS), usage: usageByModel, error: serializedError.optional() }),
    }),
    z.object({ type: z.literal('error'), error: serializedError }),
  ]),
);
