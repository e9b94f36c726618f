import { realpathSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { z } from 'zod';
import { configSchema, type ForkpoolConfig } from './config-schema.js';
import { AGENT_NAME_EXPECTED } from './agent-schema.js';
import { ConfigError, type ConfigIssue } from './errors.js';
import { isSchedulerName } from './scheduler-names.js';
import { assertKeyForEndpoint } from './endpoint-key.js';
import { broadWorkspace, broadWorkspaceIssue } from './workspace-scope.js';
import { ledgerInWorkspaceIssue } from './ledger-path.js';

export * from './config-schema.js';
export * from './agent-schema.js';
export * from './config-bounds.js';

/** The seeds' snake_case names, accepted in a config file as aliases. */
export const SNAKE_ALIASES: Readonly<Record<string, readonly [string, string]>> = {
  max_background_agents: ['background', 'maxConcurrent'],
  background_agent_timeout_minutes: ['background', 'timeoutMinutes'],
  background_agent: ['background', 'defaultAgent'],
};

/** Receives a config warning: a setting that is valid but probably not what was meant. */
export type ConfigWarningSink = (message: string) => void;

export interface ParseConfigOptions {
  /** Where warnings go; default `process.emitWarning` (type `ForkpoolConfigWarning`). */
  onWarning?: ConfigWarningSink;
  /**
   * Refuse a `workspaceRoot` that is not an existing folder (default `true`). The CLI turns it
   * off to make the same check itself and say it in one line.
   */
  checkWorkspace?: boolean;
}

const emitConfigWarning: ConfigWarningSink = (message) => process.emitWarning(message, { type: 'ForkpoolConfigWarning' });

/**
 * Rewrites the seeds' snake_case aliases into their nested places. Returns a new object.
 * When an alias and its nested field are both set, the alias wins and `onWarning` hears of it.
 */
export function normalizeAliases(input: Record<string, unknown>, onWarning: ConfigWarningSink = emitConfigWarning): Record<string, unknown> {
  const out: Record<string, unknown> = { ...input };
  for (const [alias, [group, key]] of Object.entries(SNAKE_ALIASES)) {
    if (!(alias in out)) continue;
    const value = out[alias];
    delete out[alias];
    const existing = out[group];
    const nested = existing && typeof existing === 'object' ? { ...(existing as Record<string, unknown>) } : {};
    if (key in nested && nested[key] !== value) {
      onWarning(
        `config sets both "${alias}" (${describeReceived(value)}) and "${group}.${key}" (${describeReceived(nested[key])}); ` +
          `using "${alias}" (${describeReceived(value)}). Remove one of them.`,
      );
    }
    nested[key] = value;
    out[group] = nested;
  }
  return out;
}

/**
 * Validates a raw config object. Throws {@link ConfigError} naming every bad field,
 * what it expected and what it received. `sources` maps dotted field paths to where
 * each value came from (file, environment variable, flag) so the message can say.
 */
export function parseConfig(raw: unknown, sources: Record<string, string> = {}, options: ParseConfigOptions = {}): ForkpoolConfig {
  const input = raw && typeof raw === 'object' && !Array.isArray(raw) ? normalizeAliases(raw as Record<string, unknown>, options.onWarning) : raw;
  checkRecordKeys(input, sources);
  const result = configSchema.safeParse(input, { reportInput: true });
  if (!result.success) throw new ConfigError(result.error.issues.map((issue) => toConfigIssue(issue, sources)));
  const config = result.data;
  if (config.executor === 'bullmq' && config.redisUrl === undefined) {
    throw new ConfigError([{ field: 'redisUrl', expected: 'a redis:// URL (required by executor "bullmq")', received: 'nothing' }]);
  }
  if (config.loopStopAfter <= config.loopWarnAfter) {
    throw new ConfigError([
      {
        field: 'loopStopAfter',
        expected: `a number greater than loopWarnAfter (${config.loopWarnAfter})`,
        received: String(config.loopStopAfter),
      },
    ]);
  }
  const broad = broadWorkspaceCheck(config) ?? (options.checkWorkspace === false ? undefined : missingWorkspaceIssue(config.workspaceRoot));
  if (broad) throw new ConfigError([withSource(broad, 'workspaceRoot', sources)]);
  const ledgerInWorkspace = ledgerInWorkspaceIssue(config.ledger, config.workspaceRoot);
  if (ledgerInWorkspace) throw new ConfigError([withSource(ledgerInWorkspace, 'ledger.path', sources)]);
  const { keepRecords, keepResults } = config.background.retention;
  if (keepRecords < keepResults) {
    throw new ConfigError([
      {
        field: 'background.retention.keepRecords',
        expected: `a number >= background.retention.keepResults (${keepResults}): a record is kept at least as long as its result`,
        received: String(keepRecords),
      },
    ]);
  }
  checkAgentNames(config, sources);
  checkScheduler(config, sources);
  checkSessionBudget(config, sources);
  checkThinkingBudgets(config, sources);
  const withTurns = resolveAgentTurnLimits(config, sources, options.onWarning ?? emitConfigWarning);
  return resolveJobTimeout(withTurns, input as Record<string, unknown>, sources);
}

/** The config's name-keyed maps and what a key of each must be. */
const RECORD_FIELDS: ReadonlyArray<[field: string, expected: string]> = [
  ['agents', AGENT_NAME_EXPECTED],
  ['models', 'a model name'],
];

/**
 * zod drops a "__proto__" key of a record without a word (assigning it would replace the
 * result's prototype), so a JSON file's `agents.__proto__` would vanish: refused here instead,
 * like a top-level "__proto__" (which the strict schema reports as an unknown key).
 */
function checkRecordKeys(input: unknown, sources: Record<string, string>): void {
  if (!input || typeof input !== 'object') return;
  const issues: ConfigIssue[] = [];
  for (const [field, expected] of RECORD_FIELDS) {
    const record = (input as Record<string, unknown>)[field];
    if (record && typeof record === 'object' && Object.prototype.hasOwnProperty.call(record, '__proto__')) {
      issues.push(
        withSource(
          { field: `${field}.__proto__`, expected: `${expected} ("__proto__" is not one)`, received: 'key "__proto__"' },
          `${field}.__proto__`,
          sources,
        ),
      );
    }
  }
  if (issues.length > 0) throw new ConfigError(issues);
}

/** `background.scheduler` is one of SCHEDULERS (not `default`, which means it): SCHEDULER_UNKNOWN. */
function checkScheduler(config: ForkpoolConfig, sources: Record<string, string>): void {
  const name = config.background.scheduler;
  if (isSchedulerName(name) && name !== 'default') return;
  const issue = { field: 'background.scheduler', expected: 'one of sleep, exit_on_defer, none (SCHEDULER_UNKNOWN)', received: describeReceived(name) };
  throw new ConfigError([withSource(issue, 'background.scheduler', sources)], 'SCHEDULER_UNKNOWN');
}

/** `agentTools` and `background.defaultAgent` name agents: each must be in `agents`. */
function checkAgentNames(config: ForkpoolConfig, sources: Record<string, string>): void {
  const known = Object.keys(config.agents);
  const expected =
    known.length > 0 ? `the name of an agent in "agents" (${known.map((n) => JSON.stringify(n)).join(', ')})` : 'an agent declared in "agents" (none is)';
  const issues: ConfigIssue[] = [];
  config.agentTools.forEach((name, i) => {
    if (!known.includes(name)) issues.push(withSource({ field: `agentTools.${i}`, expected, received: describeReceived(name) }, `agentTools.${i}`, sources));
  });
  const fallback = config.background.defaultAgent;
  if (fallback !== undefined && !known.includes(fallback)) {
    issues.push(withSource({ field: 'background.defaultAgent', expected, received: describeReceived(fallback) }, 'background.defaultAgent', sources));
  }
  if (issues.length > 0) throw new ConfigError(issues);
}

/** Anthropic refuses a thinking budget not below `max_tokens`: said here, for the top level and each agent (which inherit both). */
function checkThinkingBudgets(config: ForkpoolConfig, sources: Record<string, string>): void {
  const levels: Array<[prefix: string, budget: number | undefined, maxTokens: number]> = [['', config.thinking?.budgetTokens, config.maxTokens]];
  for (const [name, agent] of Object.entries(config.agents)) {
    levels.push([`agents.${name}.`, (agent.thinking ?? config.thinking)?.budgetTokens, agent.maxTokens ?? config.maxTokens]);
  }
  const issues = levels
    .filter(([, budget, maxTokens]) => budget !== undefined && budget >= maxTokens)
    .map(([prefix, budget, maxTokens]) =>
      withSource(
        {
          field: `${prefix}thinking.budgetTokens`,
          expected: `a number below ${prefix}maxTokens (${maxTokens}): the thinking budget is part of max_tokens`,
          received: String(budget),
        },
        `${prefix}thinking.budgetTokens`,
        sources,
      ),
    );
  if (issues.length > 0) throw new ConfigError(issues);
}

/**
 * A pool leases each job's own limit: a token pool needs every job to have a token limit
 * (`background.budget.maxTokens`, which agents inherit), and an empty pool is a mistake.
 */
function checkSessionBudget(config: ForkpoolConfig, sources: Record<string, string>): void {
  const pool = config.sessionBudget;
  if (!pool) return;
  if (pool.maxTokens === undefined && pool.maxCostUsd === undefined) {
    throw new ConfigError([withSource({ field: 'sessionBudget', expected: 'maxTokens, maxCostUsd or both', received: 'neither' }, 'sessionBudget', sources)]);
  }
  if (pool.maxTokens !== undefined && config.background.budget.maxTokens === undefined) {
    throw new ConfigError([
      withSource(
        {
          field: 'background.budget.maxTokens',
          expected: 'a per-job token limit when sessionBudget.maxTokens is set (each job leases its limit from the pool)',
          received: 'nothing',
        },
        'background.budget.maxTokens',
        sources,
      ),
    ]);
  }
}

/**
 * An agent's `maxIterations` is the old name of its `budget.maxTurns` (a job has one limit on its
 * model calls, its budget's, with a wrap-up message before it): moved there with a warning, and
 * removed, so the parsed config parses again unchanged. Both set to different values is an error.
 */
function resolveAgentTurnLimits(config: ForkpoolConfig, sources: Record<string, string>, onWarning: ConfigWarningSink): ForkpoolConfig {
  const names = Object.keys(config.agents).filter((name) => config.agents[name]?.maxIterations !== undefined);
  if (names.length === 0) return config;
  const agents = { ...config.agents };
  const issues: ConfigIssue[] = [];
  for (const name of names) {
    const { maxIterations, ...agent } = agents[name] as NonNullable<(typeof agents)[string]>;
    const turns = agent.budget?.maxTurns;
    if (turns !== undefined && turns !== maxIterations) {
      const field = `agents.${name}.maxIterations`;
      issues.push(
        withSource(
          {
            field,
            expected: `no maxIterations (deprecated: it is agents.${name}.budget.maxTurns, which is set to ${turns}), or the same value`,
            received: String(maxIterations),
          },
          field,
          sources,
        ),
      );
      continue;
    }
    onWarning(
      `config field "agents.${name}.maxIterations" is deprecated: a job's model calls are limited by its budget; ` +
        `using it as "agents.${name}.budget.maxTurns" (${String(maxIterations)}). Write that instead.`,
    );
    agents[name] = { ...agent, budget: { ...agent.budget, maxTurns: maxIterations as number } };
  }
  if (issues.length > 0) throw new ConfigError(issues);
  return { ...config, agents };
}

/**
 * `background.timeoutMs` is the job timeout in milliseconds, an alternative to
 * `timeoutMinutes`: both set is an error (which one was meant?); `timeoutMs` alone becomes
 * `timeoutMinutes` and is removed, so the parsed config has one timeout and parses again
 * unchanged (a job spec's config is validated once more in the worker).
 */
function resolveJobTimeout(config: ForkpoolConfig, input: Record<string, unknown>, sources: Record<string, string>): ForkpoolConfig {
  const { timeoutMs } = config.background;
  if (timeoutMs === undefined) return config;
  const rawBackground = input.background as Record<string, unknown>;
  if (rawBackground.timeoutMinutes !== undefined) {
    const from = [sources['background.timeoutMinutes'], sources['background.timeoutMs']].filter(Boolean);
    throw new ConfigError([
      {
        field: 'background.timeoutMs',
        expected: 'either background.timeoutMs or background.timeoutMinutes (or background_agent_timeout_minutes), not both',
        received: `timeoutMs ${timeoutMs} and timeoutMinutes ${describeReceived(rawBackground.timeoutMinutes)}`,
        ...(from.length ? { source: [...new Set(from)].join(', ') } : {}),
      },
    ]);
  }
  const { timeoutMs: _converted, ...background } = config.background;
  return { ...config, background: { ...background, timeoutMinutes: timeoutMs / 60_000 } };
}

/**
 * `/`, the home folder or a system folder as the workspace would hand every tool the whole
 * machine, every credential in the home folder or the system's programs: refused unless
 * `allowBroadWorkspace` says so (a path in /proc, /sys or /dev always). Checked by name and,
 * when the folder exists, by its real path.
 */
function broadWorkspaceCheck(config: ForkpoolConfig): ConfigIssue | undefined {
  const candidates = new Set([path.resolve(config.workspaceRoot)]);
  try {
    candidates.add(realpathSync(config.workspaceRoot));
  } catch {
    // A missing folder is reported where it is opened; only its name is checked here.
  }
  for (const candidate of candidates) {
    const found = broadWorkspace(candidate, os.homedir());
    if (found && (!found.forcible || !config.allowBroadWorkspace)) return broadWorkspaceIssue(config.workspaceRoot, found);
  }
  return undefined;
}

/**
 * A workspace that is not there is a config error at load, naming the path: otherwise every job
 * would fail at its start (and its record, which hides absolute paths, would name it ".").
 */
function missingWorkspaceIssue(root: string): ConfigIssue | undefined {
  const received = JSON.stringify(root);
  try {
    if (statSync(root).isDirectory()) return undefined;
    return { field: 'workspaceRoot', expected: 'an existing directory', received: `${received} (not a directory)` };
  } catch (cause) {
    const code = (cause as NodeJS.ErrnoException).code ?? 'not found';
    return { field: 'workspaceRoot', expected: 'an existing directory', received: `${received} (${code})` };
  }
}

function toConfigIssue(issue: z.core.$ZodIssue, sources: Record<string, string>): ConfigIssue {
  const base = issue.path.map(String).join('.');
  if (issue.code === 'unrecognized_keys') {
    const field = issue.keys.map((k) => (base ? `${base}.${k}` : k)).join(', ');
    return withSource(
      { field, expected: 'no such key (unknown option)', received: `key ${issue.keys.map((k) => JSON.stringify(k)).join(', ')}` },
      field,
      sources,
    );
  }
  const field = base || '(root)';
  return withSource({ field, expected: describeExpected(issue), received: describeReceived(issue.input) }, field, sources);
}

function withSource(issue: ConfigIssue, field: string, sources: Record<string, string>): ConfigIssue {
  const source = sources[field];
  return source ? { ...issue, source } : issue;
}

function describeExpected(issue: z.core.$ZodIssue): string {
  switch (issue.code) {
    case 'invalid_type':
      return issue.expected;
    case 'invalid_value':
      return `one of ${issue.values.map((v) => JSON.stringify(v)).join(', ')}`;
    case 'too_small':
      return `${issue.origin === 'string' ? 'a string of length' : 'a value'} ${issue.inclusive ? '>=' : '>'} ${String(issue.minimum)}`;
    case 'too_big':
      return `${issue.origin === 'string' ? 'a string of length' : 'a value'} ${issue.inclusive ? '<=' : '<'} ${String(issue.maximum)}`;
    case 'invalid_format':
      // A pattern with its own words (a tool or agent name) says what it wants; zod's default says "Invalid string".
      return issue.format === 'regex' && !issue.message.startsWith('Invalid') ? issue.message : `a valid ${issue.format}`;
    default:
      return issue.message;
  }
}

export function describeReceived(value: unknown): string {
  if (value === undefined) return 'nothing';
  if (typeof value === 'string') {
    const shown = withoutUrlCredentials(value);
    return JSON.stringify(shown.length > 80 ? `${shown.slice(0, 77)}...` : shown);
  }
  if (typeof value === 'number' || typeof value === 'boolean' || value === null) return String(value);
  if (Array.isArray(value)) return 'an array';
  return `a ${typeof value}`;
}

/** `scheme://user:pass@host` → `scheme://***@host`: a URL's credentials never reach an error message or a log. */
export function withoutUrlCredentials(text: string): string {
  return text.replace(/\b([a-z][a-z0-9+.-]*:\/\/)[^/?#@\s]*@/gi, '$1***@');
}

/** OpenAI's endpoint, used only when `apiKey` is set and `baseUrl` is not. */
export const OPENAI_BASE_URL = 'https://api.openai.com/v1';

/**
 * The rule for a model endpoint: `baseUrl` set (any server, key or not), or `apiKey` set (then
 * OpenAI's). Neither is a mistake, never a silent call to a paid endpoint: CONFIG_INVALID
 * naming both fields. A public `baseUrl` with no key is refused too (see endpoint-key.ts). For tests and local work, point `baseUrl` at `forkpool/sim`'s `startSimServer`.
 */
export function assertModelConfigured(config: Pick<ForkpoolConfig, 'baseUrl' | 'apiKey'> & { api?: ForkpoolConfig['api'] | undefined }): void {
  if (config.baseUrl !== undefined) return assertKeyForEndpoint(config.baseUrl, config.apiKey, 'apiKey', config.api);
  if (config.apiKey !== undefined) return;
  throw new ConfigError([
    {
      field: 'baseUrl',
      expected:
        'a model endpoint: baseUrl (an OpenAI-compatible server, e.g. startSimServer().url from forkpool/sim) or apiKey (for https://api.openai.com/v1)',
      received: 'neither baseUrl nor apiKey',
    },
  ]);
}

/** Anthropic's endpoint, used for `api: "anthropic"` when `apiKey` is set and `baseUrl` is not. */
export const ANTHROPIC_BASE_URL = 'https://api.anthropic.com/v1';

/** The endpoint a config's model client talks to (never read from the process environment). */
export function modelBaseUrl(config: Pick<ForkpoolConfig, 'baseUrl' | 'apiKey'> & { api?: ForkpoolConfig['api'] | undefined }): string {
  assertModelConfigured(config);
  return config.baseUrl ?? (config.api === 'anthropic' ? ANTHROPIC_BASE_URL : OPENAI_BASE_URL);
}
