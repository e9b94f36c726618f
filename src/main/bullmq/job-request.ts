/**
 * What a job carries through Redis: an allow-list, built field by field, of what the main side
 * decides about a job (its task, conversation, model, the endpoint it asks for, tools it wants,
 * limits it may tighten), never its config as a whole. Keys, URL credentials, the Redis URL and
 * every field added to the config later stay on the main side unless listed here. A worker
 * fills the rest (keys, workspace, sandbox, grants) from its own config: see worker-policy.ts.
 */
import { z } from 'zod';
import { configForAgent } from '../../shared/agents.js';
import { agentSchema, configSchema, modelApiSchema, modelBaseUrl } from '../../shared/config.js';
import { jobSpecSchema, type JobSpec } from '../../shared/protocol.js';
import { isSimulatorUrl } from '../../shared/simulator-urls.js';

/** The job's own fields (all but its config) that go on the wire. */
const JOB_FIELDS = [
  'id',
  'label',
  'task',
  'role',
  'parentSummary',
  'agent',
  'parentToolId',
  'depth',
  'resume',
  'attempt',
  // Not 'processTag': a worker tags a run's processes by its BullMQ id (unique across producers),
  // so every queued job is 33 bytes lighter.
  'budget',
  // Messages sent while it was queued (send_to_background_agent); later ones go by the control channel.
  'steering',
  // A spawn's own spec (checked at admission); its `tools` can only narrow the worker's.
  'systemPrompt',
  'replaceSystemPrompt',
  'tools',
  // Catalog tools the spawn adds: the worker refuses a job naming one its own config lacks.
  'extras',
  'model',
  // The job's span: the worker's run continues its trace (docs/observability.md).
  'traceparent',
  // Its between-turn scheduler: `sleep` ends a run asleep (the main process wakes it), `exit_on_defer` ends it deferred.
  'scheduler',
  // A typed job's schema (its value is the record's `data`), and the spawn's own turn timeout.
  'outputSchema',
  'turnTimeoutMs',
] as const;

/** Config fields the job's side decides; `tools`, `grantedTools` and `toolLimits` can only narrow the worker's. */
const REQUEST_FIELDS = [
  'model',
  'temperature',
  'maxIterations',
  'requestTimeoutMs',
  'firstByteTimeoutMs',
  'maxTokens',
  'thinking',
  'turnTimeoutMs',
  'streamIdleTimeoutMs',
  'maxRetries',
  'stream',
  // How a typed job is bound on its endpoint (response_format or the submit_result tool).
  'structuredOutput',
  'maxResponseChars',
  'errorDetail',
  'loopWarnAfter',
  'loopStopAfter',
  'tools',
  'grantedTools',
  'toolLimits',
  'models',
] as const;

const BACKGROUND_FIELDS = ['timeoutMinutes', 'cancelGraceMs', 'maxAlertsPerJob', 'maxDepth'] as const;

/** The job's agent entry without its key and endpoint (the endpoint is the request's `baseUrl`). */
const AGENT_FIELDS = [
  'description',
  'model',
  'systemPrompt',
  'replaceSystemPrompt',
  'tools',
  'maxIterations',
  'temperature',
  'maxTokens',
  'thinking',
  'maxDepth',
  'budget',
  'outputSchema',
  'structuredOutput',
  'turnTimeoutMs',
] as const;

const configFields = Object.fromEntries(REQUEST_FIELDS.map((field) => [field, true])) as { [K in (typeof REQUEST_FIELDS)[number]]: true };
const backgroundFields = Object.fromEntries(BACKGROUND_FIELDS.map((field) => [field, true])) as { [K in (typeof BACKGROUND_FIELDS)[number]]: true };
const agentFields = Object.fromEntries(AGENT_FIELDS.map((field) => [field, true])) as { [K in (typeof AGENT_FIELDS)[number]]: true };

/** Strict: a job carrying anything else (a key, a workspace, a sandbox setting) is refused as malformed. */
export const jobRequestSchema = configSchema.pick(configFields).extend({
  /** The job's model endpoint (its agent's, else the parent's) without credentials. */
  baseUrl: z.url({ protocol: /^https?$/ }),
  /**
   * The wire `baseUrl` speaks (its agent's `api`, else the config's): the job's requests go out
   * on it. Absent (a producer from before it was carried): the worker's own for that endpoint.
   */
  api: modelApiSchema.optional(),
  background: configSchema.shape.background.unwrap().pick(backgroundFields),
  agent: agentSchema.pick(agentFields).optional(),
  /** `baseUrl` is a forkpool simulator of the producer's process: a worker runs it on its own (worker-policy.ts). */
  simulator: z.literal(true).optional(),
});
export type JobRequest = z.output<typeof jobRequestSchema>;

/** A BullMQ job's spec: the job's fields and its {@link JobRequest}. */
export const wireSpecSchema = jobSpecSchema.omit({ config: true }).extend({ request: jobRequestSchema });
export type WireSpec = z.output<typeof wireSpecSchema>;

/** A job's own fields as its BullMQ job carries them; its request is stored once per fan-out (request-store.ts). */
export type WireJob = Omit<WireSpec, 'request'>;

/** The spec as a worker sees it (see the module comment): the job's own fields and its request. */
export function specForRedis(spec: JobSpec): WireSpec {
  return { ...jobForRedis(spec), request: requestForRedis(spec) };
}

/** The job's own fields, without its config. */
export function jobForRedis(spec: JobSpec): WireJob {
  return pickDefined(spec, JOB_FIELDS);
}

/** What the job asks of a worker: the same for every job of a fan-out that shares its config and agent. */
export function requestForRedis(spec: JobSpec): JobRequest {
  const { config } = spec;
  const agent = spec.agent === undefined ? undefined : config.agents[spec.agent];
  const endpoint = configForAgent(config, spec.agent);
  const baseUrl = withoutCredentials(modelBaseUrl(endpoint));
  return {
    ...pickDefined(config, REQUEST_FIELDS),
    baseUrl,
    api: endpoint.api,
    ...(isSimulatorUrl(baseUrl) ? { simulator: true as const } : {}),
    background: pickDefined(config.background, BACKGROUND_FIELDS),
    ...(agent ? { agent: pickDefined(agent, AGENT_FIELDS) } : {}),
  };
}

/**
 * A model endpoint as both sides compare it: no user name or password (they are secrets; a
 * worker uses its own URL's), no trailing slash.
 */
export function withoutCredentials(url: string): string {
  const parsed = new URL(url);
  parsed.username = '';
  parsed.password = '';
  return parsed.href.replace(/\/+$/, '');
}

/** A new object with the listed fields of `source` that are set. */
function pickDefined<T extends object, K extends keyof T>(source: T, keys: readonly K[]): Pick<T, K> {
  const out = {} as Pick<T, K>;
  for (const key of keys) if (source[key] !== undefined) out[key] = source[key];
  return out;
}
