/**
 * `forkpool init`: writes a starter forkpool.config.json in the working directory, commented
 * (the file may hold // and /* *\/ comments, as tsconfig.json does) and pointing at the JSON
 * Schema shipped with the package, so an editor completes and checks every field. It never
 * overwrites a file without `--force`, and it holds no key: keys belong in the environment.
 */
import { existsSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { CONFIG_FILE_NAME } from '../main/setup/config-load.js';
import { DEFAULTS } from '../shared/defaults.js';
import { EXIT, usageProblem } from './exit.js';

export interface InitFlags {
  force?: boolean;
}

/** The schema beside the package's package.json (dist/cli/init.js → ../../). */
const SCHEMA_FILE = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..', 'forkpool.config.schema.json');

/** The starter file: every setting shown is the default or commented out, so it changes nothing until edited. */
export function starterConfig(schemaPath: string): string {
  return `{
  "$schema": ${JSON.stringify(schemaPath)},
  // forkpool's configuration. Every field is optional; docs/configuration.md lists them all.
  // Keep API keys out of this file: set OPENAI_API_KEY in the environment instead.
  // Uncomment a line to use it (each ends with a comma: the last setting is "background").

  // The model: any OpenAI-compatible server. With no baseUrl and no key, the built-in simulator answers.
  // "baseUrl": "https://api.openai.com/v1",
  // "model": "gpt-4.1-mini",

  // Tools a job may use without asking (the rest are refused in the background):
  // "grantedTools": ["read_file", "list_dir", "find_files", "grep", "code_outline"],

  // Keep every job in a SQLite file (outside this folder), so results survive a restart:
  // "ledger": { "path": "/var/lib/forkpool/ledger.db" },

  // One pool of dollars for all of a session's jobs (needs prices in "models"):
  // "sessionBudget": { "maxCostUsd": 5 },

  "background": {
    // Background jobs running at once.
    "maxConcurrent": ${DEFAULTS.background.maxConcurrent},
    // "thread": one job per worker thread (a job that crashes or hangs is stopped alone);
    // "shared": many jobs per thread (lighter for large I/O fan-outs).
    "isolation": "thread",
    // Each job's wall clock, in minutes, counted from its start.
    "timeoutMinutes": ${DEFAULTS.background.timeoutMinutes}
  }
}
`;
}

export function initCommand(flags: InitFlags, cwd = process.cwd()): number {
  const file = path.join(cwd, CONFIG_FILE_NAME);
  if (existsSync(file) && !flags.force) return usageProblem('init', `${CONFIG_FILE_NAME} already exists here; edit it, or run with --force to replace it`);
  const schema = path.relative(cwd, SCHEMA_FILE) || SCHEMA_FILE;
  writeFileSync(file, starterConfig(schema.startsWith('.') ? schema : `./${schema}`), { mode: 0o600 });
  process.stdout.write(`wrote ${file}\n`);
  return EXIT.ok;
}
