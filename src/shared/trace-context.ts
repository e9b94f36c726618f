/**
 * The W3C `traceparent` a job carries (its spec, a BullMQ job's data). Apart from tracing.ts so
 * that the protocol, which the worker imports, does not load `@opentelemetry/api`.
 */

/** Version 00, 32 hex trace id, 16 hex span id, 2 hex flags (lower case, as the spec writes them). */
export const TRACEPARENT_PATTERN = /^00-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$/;
