import { ConfigError, type ConfigIssue } from '../shared/errors.js';
import { FAULT_KINDS, type FaultKind, type FaultSpec, type ScriptStep, type SimServerOptions } from './types.js';

/** Kinds drawn by `faultRate` unless `faultKinds` says otherwise: nothing that hangs. */
export const DEFAULT_RANDOM_FAULT_KINDS: readonly FaultKind[] = FAULT_KINDS.filter(
  (k) => k !== 'hang_before_headers' && k !== 'stall_mid_stream' && k !== 'slow_drip' && k !== '401' && k !== '404' && k !== 'length',
);

export const SIM_DEFAULTS = {
  port: 0,
  host: '127.0.0.1',
  latencyMs: 0,
  perTokenMs: 0,
  jitterMs: 0,
  seed: 1,
  faultRate: 0,
  maxTokensPerChunk: 4,
  endlessToolCalls: false,
  recordBodies: false,
  requestLogLimit: 10_000,
  /** Gap between chunks of a 'slow_drip' response. */
  dripIntervalMs: 50,
  researchSteps: 3,
  retryAfterSeconds: 1,
  /** Interval of SSE comments sent by a stalled stream. */
  keepAliveIntervalMs: 500,
  /** Largest request body accepted. */
  maxBodyBytes: 32 * 1024 * 1024,
} as const;

/** Options with every default filled in; `script`/`faults` stay optional. */
export interface ResolvedSimOptions {
  port: number;
  host: string;
  latencyMs: number;
  perTokenMs: number;
  jitterMs: number;
  seed: number;
  script: readonly ScriptStep[] | undefined;
  faults: Readonly<Record<number, FaultSpec>>;
  faultRate: number;
  faultKinds: readonly FaultKind[];
  maxTokensPerChunk: number;
  endlessToolCalls: boolean;
  recordBodies: boolean;
  requestLogLimit: number;
  researchSteps: number;
  capacity: number | undefined;
  capacityRetryAfterSeconds: number;
  servedModel: string | undefined;
}

export function resolveOptions(opts: SimServerOptions): ResolvedSimOptions {
  const issues = validateOptions(opts);
  if (issues.length > 0) throw new ConfigError(issues);
  return {
    port: opts.port ?? SIM_DEFAULTS.port,
    host: opts.host ?? SIM_DEFAULTS.host,
    latencyMs: opts.latencyMs ?? SIM_DEFAULTS.latencyMs,
    perTokenMs: opts.perTokenMs ?? SIM_DEFAULTS.perTokenMs,
    jitterMs: opts.jitterMs ?? SIM_DEFAULTS.jitterMs,
    seed: opts.seed ?? SIM_DEFAULTS.seed,
    // Copies, so later changes to the caller's arrays do not leak in (and we never write to theirs).
    script: opts.script ? [...opts.script] : undefined,
    faults: { ...(opts.faults ?? {}) },
    faultRate: opts.faultRate ?? SIM_DEFAULTS.faultRate,
    faultKinds: opts.faultKinds ? [...opts.faultKinds] : DEFAULT_RANDOM_FAULT_KINDS,
    maxTokensPerChunk: opts.maxTokensPerChunk ?? SIM_DEFAULTS.maxTokensPerChunk,
    endlessToolCalls: opts.endlessToolCalls ?? SIM_DEFAULTS.endlessToolCalls,
    recordBodies: opts.recordBodies ?? SIM_DEFAULTS.recordBodies,
    requestLogLimit: opts.requestLogLimit ?? SIM_DEFAULTS.requestLogLimit,
    servedModel: opts.servedModel,
    researchSteps: opts.researchSteps ?? SIM_DEFAULTS.researchSteps,
    capacity: opts.capacity,
    capacityRetryAfterSeconds: opts.capacityRetryAfterSeconds ?? SIM_DEFAULTS.retryAfterSeconds,
  };
}

function show(value: unknown): string {
  try {
    return JSON.stringify(value) ?? String(value);
  } catch {
    return String(value);
  }
}

export function validateOptions(opts: SimServerOptions): ConfigIssue[] {
  const issues: ConfigIssue[] = [];
  const bad = (field: string, expected: string, value: unknown) => issues.push({ field: `sim.${field}`, expected, received: show(value) });
  const nonNegative = (field: keyof SimServerOptions) => {
    const v = opts[field];
    if (v !== undefined && !(typeof v === 'number' && Number.isFinite(v) && v >= 0)) bad(field, 'a finite number >= 0', v);
  };
  if (opts.port !== undefined && !(Number.isInteger(opts.port) && opts.port >= 0 && opts.port <= 65_535)) {
    bad('port', 'an integer 0..65535', opts.port);
  }
  if (opts.host !== undefined && (typeof opts.host !== 'string' || opts.host === '')) bad('host', 'a non-empty string', opts.host);
  nonNegative('latencyMs');
  nonNegative('perTokenMs');
  nonNegative('jitterMs');
  if (opts.seed !== undefined && !Number.isInteger(opts.seed)) bad('seed', 'an integer', opts.seed);
  if (opts.faultRate !== undefined && !(typeof opts.faultRate === 'number' && opts.faultRate >= 0 && opts.faultRate <= 1)) {
    bad('faultRate', 'a number from 0 to 1', opts.faultRate);
  }
  if (opts.faultKinds !== undefined) {
    if (!Array.isArray(opts.faultKinds) || opts.faultKinds.length === 0) bad('faultKinds', 'a non-empty array of fault kinds', opts.faultKinds);
    else
      opts.faultKinds.forEach((k, i) => {
        if (!FAULT_KINDS.includes(k)) bad(`faultKinds[${i}]`, `one of ${FAULT_KINDS.join(', ')}`, k);
      });
  }
  if (opts.researchSteps !== undefined && !(Number.isInteger(opts.researchSteps) && opts.researchSteps >= 1 && opts.researchSteps <= 100)) {
    bad('researchSteps', 'an integer 1..100', opts.researchSteps);
  }
  if (opts.capacity !== undefined && !(Number.isInteger(opts.capacity) && opts.capacity >= 1))
    bad('capacity', 'an integer >= 1 (chat requests in flight)', opts.capacity);
  nonNegative('capacityRetryAfterSeconds');
  if (opts.requestLogLimit !== undefined && !(Number.isInteger(opts.requestLogLimit) && opts.requestLogLimit >= 0)) {
    bad('requestLogLimit', 'an integer >= 0', opts.requestLogLimit);
  }
  if (opts.servedModel !== undefined && !(typeof opts.servedModel === 'string' && opts.servedModel !== ''))
    bad('servedModel', 'a non-empty string', opts.servedModel);
  if (opts.recordBodies !== undefined && typeof opts.recordBodies !== 'boolean') bad('recordBodies', 'a boolean', opts.recordBodies);
  if (opts.maxTokensPerChunk !== undefined && !(Number.isInteger(opts.maxTokensPerChunk) && opts.maxTokensPerChunk >= 1)) {
    bad('maxTokensPerChunk', 'an integer >= 1', opts.maxTokensPerChunk);
  }
  if (opts.faults !== undefined) {
    for (const [key, spec] of Object.entries(opts.faults)) {
      const n = Number(key);
      if (!Number.isInteger(n) || n < 1) bad(`faults.${key}`, 'a key that is a 1-based request number', key);
      checkFault(`faults.${key}`, spec, bad);
    }
  }
  if (opts.script !== undefined) {
    if (!Array.isArray(opts.script)) bad('script', 'an array of steps', opts.script);
    else
      opts.script.forEach((step, i) => {
        if (typeof step !== 'object' || step === null) return void bad(`script[${i}]`, 'an object', step);
        if (step.content !== undefined && typeof step.content !== 'string') bad(`script[${i}].content`, 'a string', step.content);
        step.toolCalls?.forEach((call, j) => {
          if (typeof call?.name !== 'string' || call.name === '') bad(`script[${i}].toolCalls[${j}].name`, 'a non-empty string', call?.name);
        });
        if (step.finishReason !== undefined && step.finishReason !== 'length') bad(`script[${i}].finishReason`, '"length"', step.finishReason);
        if (step.fault !== undefined) checkFault(`script[${i}].fault`, step.fault, bad);
      });
  }
  return issues;
}

function checkFault(field: string, spec: FaultSpec, bad: (field: string, expected: string, value: unknown) => void): void {
  if (typeof spec !== 'object' || spec === null || !FAULT_KINDS.includes(spec.kind)) {
    bad(`${field}.kind`, `one of ${FAULT_KINDS.join(', ')}`, spec?.kind);
    return;
  }
  const s = spec.retryAfterSeconds;
  if (s !== undefined && !(typeof s === 'number' && Number.isFinite(s) && s >= 0)) bad(`${field}.retryAfterSeconds`, 'a number >= 0', s);
  const d = spec.dripIntervalMs;
  if (d !== undefined && !(typeof d === 'number' && Number.isFinite(d) && d >= 1)) bad(`${field}.dripIntervalMs`, 'a number >= 1', d);
}
