import { existsSync, readFileSync } from 'node:fs';
import { ToolCatalog } from '../tools/catalog.js';
import { resolveToolModules, toolModulesOf } from '../tools/tool-modules.js';
import path from 'node:path';
import { stripComments } from 'jsonc-parser';
import { ConfigError } from '../../shared/errors.js';
import { applyProviderKeys } from './provider-keys.js';
import { parseConfig, describeReceived, normalizeAliases, type ConfigWarningSink, type ForkpoolConfig, type ForkpoolConfigInput } from '../../shared/config.js';

export const CONFIG_FILE_NAME = 'forkpool.config.json';

/** Flags the CLI (or an embedding program) passes; the strongest layer. */
export interface ConfigOverrides {
  configPath?: string | undefined;
  model?: string | undefined;
  baseUrl?: string | undefined;
  /** `--api`: the wire the endpoint speaks (`chat`, `responses`, `anthropic`). */
  api?: string | undefined;
  workspace?: string | undefined;
  allowBroadWorkspace?: boolean | undefined;
  /** The parent's model calls per turn (`maxIterations`). */
  maxIterations?: number | undefined;
  /** A background job's model calls (`background.budget.maxTurns`): the one limit on a job's turns. */
  maxTurns?: number | undefined;
  concurrency?: number | undefined;
  isolation?: string | undefined;
  /**
   * The command's own default for `background.isolation`, the weakest layer: used only when no
   * file, environment variable, code config or flag sets it (`forkpool fanout`: `shared`).
   */
  defaultIsolation?: 'thread' | 'shared' | undefined;
  /**
   * The command's own default for `sessionBudget.onExhausted`, used only when a `sessionBudget`
   * is set without one (`forkpool fanout`: `queue`, so a task waits for budget to come back
   * instead of being refused while other tasks hold it).
   */
  defaultOnExhausted?: 'refuse' | 'queue' | undefined;
  timeoutMinutes?: number | undefined;
  grant?: readonly string[] | undefined;
  permissionMode?: string | undefined;
  /** `--role primary|escalation`: the parent agent's role. */
  role?: string | undefined;
  stream?: boolean | undefined;
  /** `--ledger FILE`: the durable ledger's SQLite file. */
  ledgerPath?: string | undefined;
  /** `--allow-ledger-in-workspace`: accept a ledger file inside the workspace. */
  allowLedgerInWorkspace?: boolean | undefined;
  /** Hears config warnings (e.g. an alias and its field both set); default `process.emitWarning`. */
  onWarning?: ConfigWarningSink | undefined;
}

/** Environment variables read, with the config field each one sets. */
const ENV_FIELDS: ReadonlyArray<[env: string, field: string, kind: 'string' | 'number' | 'list']> = [
  ['OPENAI_API_KEY', 'apiKey', 'string'],
  ['OPENAI_BASE_URL', 'baseUrl', 'string'],
  ['OPENAI_MODEL', 'model', 'string'],
  ['FORKPOOL_MODEL', 'model', 'string'],
  ['FORKPOOL_WORKSPACE', 'workspaceRoot', 'string'],
  ['FORKPOOL_MAX_BACKGROUND_AGENTS', 'background.maxConcurrent', 'number'],
  ['FORKPOOL_BACKGROUND_TIMEOUT_MINUTES', 'background.timeoutMinutes', 'number'],
  ['FORKPOOL_ISOLATION', 'background.isolation', 'string'],
  ['FORKPOOL_GRANT', 'grantedTools', 'list'],
  ['FORKPOOL_REDIS_URL', 'redisUrl', 'string'],
];

/** What {@link loadConfig} reads. Nothing outside the call is read unless asked for. */
export interface LoadConfigOptions {
  /** Any part of the config, validated like a file (every field a file accepts). */
  config?: ForkpoolConfigInput | Record<string, unknown>;
  /** Read `OPENAI_*` and `FORKPOOL_*` variables: `true` for `process.env`, or an env object. Default: no. */
  fromEnv?: boolean | NodeJS.ProcessEnv;
  /**
   * Read a config file: a path (it must exist), or `true` for `./forkpool.config.json` in `cwd`
   * when there is one. Default: no file, so a server never picks up a stray one.
   */
  file?: string | boolean;
  /** The CLI's flags; the strongest layer. */
  flags?: ConfigOverrides;
  /** Resolves relative paths (`file`, `workspaceRoot`); default `process.cwd()`. */
  cwd?: string;
  /** Hears config warnings (e.g. an alias and its field both set); default `process.emitWarning`. */
  onWarning?: ConfigWarningSink;
  /** Refuse a workspace that is not an existing folder (default `true`; see ParseConfigOptions). */
  checkWorkspace?: boolean;
}

/**
 * Builds and validates a configuration. From code: `loadConfig({ config: { baseUrl, background:
 * { heapMb: 256 } } })` reads nothing else. Layers, weakest first: the file (when `file` asks),
 * the environment (when `fromEnv` asks), `config`, then `flags`. Throws {@link ConfigError}
 * naming the field, what it expected, what it got and where from.
 *
 * The older form `loadConfig(flags, env, cwd)` is the CLI's layering: the file (`flags.configPath`
 * or `./forkpool.config.json`), `env`, then flags.
 */
export function loadConfig(options?: LoadConfigOptions): ForkpoolConfig;
export function loadConfig(flags: ConfigOverrides, env: NodeJS.ProcessEnv, cwd?: string): ForkpoolConfig;
export function loadConfig(first: LoadConfigOptions | ConfigOverrides = {}, env?: NodeJS.ProcessEnv, cwd?: string): ForkpoolConfig {
  if (env === undefined && cwd === undefined) return loadLayers(first as LoadConfigOptions);
  const flags = first as ConfigOverrides;
  return loadLayers({
    flags,
    fromEnv: env ?? process.env,
    file: flags.configPath ?? true,
    cwd: cwd ?? process.cwd(),
    ...(flags.onWarning ? { onWarning: flags.onWarning } : {}),
  });
}

function loadLayers(options: LoadConfigOptions): ForkpoolConfig {
  const cwd = options.cwd ?? process.cwd();
  const flags = options.flags ?? {};
  const onWarning = options.onWarning ?? flags.onWarning;
  // Null prototypes: a "__proto__" key in a file must stay an own key (and be refused as an
  // unknown option), not become the object's prototype and be dropped without a word.
  const raw = Object.create(null) as Record<string, unknown>;
  const sources = Object.create(null) as Record<string, string>;

  const explicitFile = typeof options.file === 'string' ? options.file : undefined;
  const filePath = explicitFile ? path.resolve(cwd, explicitFile) : path.join(cwd, CONFIG_FILE_NAME);
  let fileRead: string | undefined;
  if (explicitFile || (options.file === true && existsSync(filePath))) {
    fileRead = filePath;
    // Aliases are resolved inside the file, so an environment variable or a flag for the same
    // field still wins over a file's `max_background_agents`.
    const fromFile = normalizeAliases(readConfigFile(filePath), onWarning);
    for (const [key, value] of Object.entries(fromFile)) {
      raw[key] = value;
      markSources(sources, key, value, filePath);
    }
    if (typeof raw.workspaceRoot === 'string') raw.workspaceRoot = path.resolve(path.dirname(filePath), raw.workspaceRoot);
  }

  const env = options.fromEnv === true ? process.env : options.fromEnv || undefined;
  for (const [name, field, kind] of env ? ENV_FIELDS : []) {
    const value = env?.[name];
    if (value === undefined || value === '') continue;
    setLayeredField(raw, sources, field, kind === 'number' ? toNumber(value) : kind === 'list' ? splitList(value) : value, `environment variable ${name}`);
  }

  if (options.config !== undefined) mergeCodeConfig(raw, sources, options.config, onWarning);

  const flagFields: Array<[field: string, value: unknown, flag: string]> = [
    ['model', flags.model, '--model'],
    ['baseUrl', flags.baseUrl, '--base-url'],
    ['api', flags.api, '--api'],
    ['workspaceRoot', flags.workspace, '--workspace'],
    ['allowBroadWorkspace', flags.allowBroadWorkspace, '--allow-broad-workspace'],
    ['maxIterations', flags.maxIterations, '--max-iterations'],
    ['background.budget.maxTurns', flags.maxTurns, '--max-turns'],
    ['background.maxConcurrent', flags.concurrency, '--concurrency'],
    ['background.isolation', flags.isolation, '--isolation'],
    ['background.timeoutMinutes', flags.timeoutMinutes, '--timeout'],
    ['grantedTools', flags.grant, '--grant'],
    ['permissionMode', flags.permissionMode, '--ask'],
    ['role', flags.role, '--role'],
    ['stream', flags.stream, '--no-stream'],
    ['ledger.path', flags.ledgerPath, '--ledger'],
    ['ledger.allowInWorkspace', flags.allowLedgerInWorkspace, '--allow-ledger-in-workspace'],
  ];
  for (const [field, value, flag] of flagFields) {
    if (value === undefined) continue;
    setLayeredField(raw, sources, field, value, `flag ${flag}`);
  }

  // After every layer: a file's `background` group replaces the whole group, so a default set first would be lost.
  if (flags.defaultIsolation !== undefined && sources['background.isolation'] === undefined)
    setLayeredField(raw, sources, 'background.isolation', flags.defaultIsolation, "the command's default");
  const budget = raw.sessionBudget;
  if (flags.defaultOnExhausted !== undefined && budget && typeof budget === 'object' && !Array.isArray(budget) && !Object.hasOwn(budget, 'onExhausted'))
    setLayeredField(raw, sources, 'sessionBudget.onExhausted', flags.defaultOnExhausted, "the command's default");

  applyProviderKeys(raw, sources, env);
  raw.workspaceRoot = path.resolve(cwd, typeof raw.workspaceRoot === 'string' ? raw.workspaceRoot : '.');
  hideFromTools(raw, fileRead, cwd);
  const config = parseConfig(raw, sources, { ...(onWarning ? { onWarning } : {}), ...(options.checkWorkspace === false ? { checkWorkspace: false } : {}) });
  // Tool modules relative to the config file; each loaded now (once), so one that fails, or a
  // tool name that clashes, is a config error at load. Names of host tools are checked later,
  // when the manager that has them starts.
  const withModules = resolveToolModules(config, fileRead ? path.dirname(fileRead) : cwd, fileRead);
  if (toolModulesOf(withModules).length > 0) new ToolCatalog(withModules);
  return withModules;
}

/**
 * The config given in code, over the file and environment: top-level fields replace, the
 * nested groups (`background`, `toolLimits`) merge field by field. A non-object is reported
 * as the root, like a file that is not a JSON object.
 */
function mergeCodeConfig(raw: Record<string, unknown>, sources: Record<string, string>, config: unknown, onWarning: ConfigWarningSink | undefined): void {
  if (!config || typeof config !== 'object' || Array.isArray(config)) {
    throw new ConfigError([{ field: '(root)', expected: 'an object', received: describeReceived(config), source: 'loadConfig({ config })' }]);
  }
  for (const [key, value] of Object.entries(normalizeAliases(config as Record<string, unknown>, onWarning))) {
    if (value === undefined) continue;
    if (value && typeof value === 'object' && !Array.isArray(value)) {
      for (const [nested, nestedValue] of Object.entries(value)) {
        if (nestedValue !== undefined) setLayeredField(raw, sources, `${key}.${nested}`, nestedValue, 'loadConfig({ config })');
      }
      if (Object.keys(value).length === 0 && raw[key] === undefined) raw[key] = {};
    } else {
      setLayeredField(raw, sources, key, value, 'loadConfig({ config })');
    }
  }
}

/** Fields that say the same thing another way: a stronger layer setting one drops the other. */
const SAME_SETTING: Record<string, string> = {
  'background.timeoutMinutes': 'background.timeoutMs',
  'background.timeoutMs': 'background.timeoutMinutes',
};

function setLayeredField(raw: Record<string, unknown>, sources: Record<string, string>, field: string, value: unknown, source: string): void {
  const other = SAME_SETTING[field];
  if (other) deleteField(raw, other);
  setField(raw, field, value);
  sources[field] = source;
}

function deleteField(target: Record<string, unknown>, dotted: string): void {
  const [group, key] = dotted.split('.');
  const nested = group === undefined ? undefined : target[group];
  if (key === undefined || !nested || typeof nested !== 'object' || Array.isArray(nested)) return;
  const copy = { ...(nested as Record<string, unknown>) };
  delete copy[key];
  target[group as string] = copy;
}

/**
 * The config file read holds the key when it is in the workspace (a forkpool.config.json in
 * the working directory, docs/configuration.md): no tool may open it. Added to `hiddenPaths` with every entry made absolute against `cwd` (a job
 * resolves them in its worker; a manager's jobs share the process's working directory, a
 * library caller's `cwd` may differ). A `hiddenPaths` that is not a list is left for the schema.
 */
function hideFromTools(raw: Record<string, unknown>, configFile: string | undefined, cwd: string): void {
  const listed = raw.hiddenPaths ?? [];
  if (!Array.isArray(listed)) return;
  const absolute = listed.map((p: unknown) => (typeof p === 'string' && p !== '' ? path.resolve(cwd, p) : p));
  raw.hiddenPaths = configFile === undefined ? absolute : [...absolute, configFile];
}

function readConfigFile(filePath: string): Record<string, unknown> {
  let text: string;
  try {
    text = readFileSync(filePath, 'utf8');
  } catch (error) {
    throw new ConfigError([
      { field: '(file)', expected: 'a readable JSON file', received: `${(error as NodeJS.ErrnoException).code ?? 'error'} reading ${filePath}` },
    ]);
  }
  let parsed: unknown;
  try {
    // Comments (// and /* */, as in tsconfig.json) become spaces; then plain JSON.parse, which keeps a
    // "__proto__" key an own key (refused below as an unknown option, not a prototype).
    parsed = JSON.parse(stripComments(text, ' '));
  } catch (error) {
    // V8 quotes the text around a syntax error, which may be part of an API key: keep the diagnosis only.
    const reason = (error as Error).message.replace(/,\s*(?:\.\.\.)?"[\s\S]*"(?:\.\.\.)?\s*is not valid JSON$/, '');
    throw new ConfigError([{ field: '(file)', expected: 'valid JSON', received: reason, source: filePath }]);
  }
  if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed)) {
    throw new ConfigError([{ field: '(root)', expected: 'a JSON object', received: describeReceived(parsed), source: filePath }]);
  }
  // `$schema` points an editor at forkpool.config.schema.json: the file's, not a setting.
  const { $schema, ...settings } = parsed as Record<string, unknown>;
  if ($schema !== undefined && typeof $schema !== 'string')
    throw new ConfigError([{ field: '$schema', expected: 'a path or URL of the JSON Schema', received: describeReceived($schema), source: filePath }]);
  return settings;
}

function markSources(sources: Record<string, string>, key: string, value: unknown, filePath: string): void {
  sources[key] = filePath;
  if (value && typeof value === 'object' && !Array.isArray(value)) {
    for (const nested of Object.keys(value)) sources[`${key}.${nested}`] = filePath;
  }
}

function setField(target: Record<string, unknown>, dotted: string, value: unknown): void {
  const [head, ...rest] = dotted.split('.');
  if (head === undefined) return;
  // defineProperty, not `=`: a "__proto__" key stays an own key (refused by the schema check),
  // never the object's prototype, dropped without a word.
  const own = (to: unknown) => Object.defineProperty(target, head, { value: to, enumerable: true, writable: true, configurable: true });
  if (rest.length === 0) {
    own(value);
    return;
  }
  const existing = Object.prototype.hasOwnProperty.call(target, head) ? target[head] : undefined;
  const nested = existing && typeof existing === 'object' && !Array.isArray(existing) ? { ...(existing as Record<string, unknown>) } : {};
  setField(nested, rest.join('.'), value);
  own(nested);
}

/** A number when it is one; otherwise the string, so the schema reports what was received. */
function toNumber(value: string): number | string {
  const n = Number(value);
  return value.trim() !== '' && Number.isFinite(n) ? n : value;
}

function splitList(value: string): string[] {
  return value
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
}
