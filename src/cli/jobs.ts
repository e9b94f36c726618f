/**
 * `forkpool jobs show ID --ledger FILE [--scope S] [--json]`: what a job of a finished fan-out or
 * session did, read from its durable ledger: its line (state, status, time, tokens), then its
 * transcript, step by step (views/transcript-lines.ts; every model or tool text escaped). The
 * ledger is only read: no lease is taken, so it works beside the process that writes it.
 */
import { existsSync } from 'node:fs';
import { TRANSCRIPT_LIMITS } from '../shared/fixed-limits.js';
import { escapeForTerminal, jsonForTerminal } from '../shared/terminal-text.js';
import type { JobRecord } from '../main/ledger/job-record.js';
import { openSqliteLedger } from '../main/ledger/sqlite-store.js';
import { jobJson, sleepingUntil } from '../main/views/job-view.js';
import { jobLine } from '../main/views/terminal-lines.js';
import { transcriptLines } from '../main/views/transcript-lines.js';
import { loadConfig } from '../main/setup/config-load.js';
import { EXIT, usageProblem } from './exit.js';

export interface JobsShowFlags {
  ledger?: string;
  config?: string;
  scope?: string;
  json?: boolean;
  offset?: number;
  limit?: number;
}

const COMMAND = 'jobs show';

export function jobsShowCommand(id: string, flags: JobsShowFlags): number {
  const file = flags.ledger ?? ledgerOfConfig(flags.config);
  if (file === undefined) return usageProblem(COMMAND, 'no ledger: pass --ledger FILE (the file a fan-out or session ran with), or set ledger.path');
  if (!existsSync(file)) return usageProblem(COMMAND, `no ledger file ${JSON.stringify(file)}`);
  const store = openSqliteLedger(file);
  try {
    const scopes = store.scopesOf(id);
    const scope = flags.scope ?? (scopes.length === 1 ? scopes[0] : undefined);
    if (scopes.length === 0 || (flags.scope !== undefined && !scopes.includes(flags.scope))) {
      return usageProblem(COMMAND, `no job ${JSON.stringify(id)} in ${JSON.stringify(file)}${flags.scope ? ` (scope ${JSON.stringify(flags.scope)})` : ''}`);
    }
    if (scope === undefined) {
      return usageProblem(COMMAND, `job ${JSON.stringify(id)} is in several scopes of this ledger (${scopes.join(', ')}): pick one with --scope`);
    }
    const jobs = store.jobs(scope);
    const record = jobs.load().jobs.find((job) => job.record.id === id)?.record;
    if (!record) return usageProblem(COMMAND, `job ${JSON.stringify(id)} in scope ${JSON.stringify(scope)} failed its check and cannot be shown`);
    const transcript = jobs.transcript(id) ?? { steps: [], total: 0 };
    const offset = Math.min(flags.offset ?? 0, transcript.steps.length);
    const steps = transcript.steps.slice(offset, offset + (flags.limit ?? transcript.steps.length));
    const page = {
      jobId: id,
      ...(record.branch !== undefined ? { branch: record.branch } : {}),
      total: transcript.total,
      omitted: transcript.total - transcript.steps.length,
      offset,
      kept: transcript.steps.length,
      steps,
    };
    if (flags.json) {
      process.stdout.write(`${jsonForTerminal({ type: 'job', scope, job: jobJson(record), transcript: page })}\n`);
      return EXIT.ok;
    }
    const tools = record.tools ? [`tools offered: ${record.tools.join(', ') || 'none'}`] : [];
    // A typed job's value, as one line of JSON (escaped for the terminal like every model text).
    const data = record.data !== undefined ? [`data: ${jsonForTerminal(record.data)}`] : [];
    const branch = record.branch !== undefined ? [`branch: ${record.branch}`] : [];
    // A sleeping job (scheduler sleep): when it wakes and what it said it will do then (a model's text: escaped).
    const wakes = sleepingUntil(record);
    const asleep = wakes !== null ? [`asleep until ${new Date(wakes).toISOString()}: ${escapeForTerminal(record.sleepWait?.reason ?? '')}`] : [];
    const lines = [jobLine(record), ...asleep, summaryLine(record, page), ...branch, ...tools, ...data, ...transcriptLines(steps, { maxBodyLines: 20 })];
    process.stdout.write(`${lines.join('\n')}\n`);
    return EXIT.ok;
  } finally {
    store.close();
  }
}

/** What the transcript holds, or why it holds nothing. */
function summaryLine(record: Readonly<JobRecord>, page: { total: number; omitted: number; kept: number; offset: number; steps: unknown[] }): string {
  if (page.total === 0) {
    if (record.resultDropped) return 'transcript: dropped with its result by retention (background.retention)';
    return record.state === 'queued' ? 'transcript: none yet (queued)' : 'transcript: none kept (the job ran before transcripts were kept, or sent no step)';
  }
  const left = page.omitted > 0 ? `, ${page.omitted} left out by the cap (${TRANSCRIPT_LIMITS.maxSteps} steps)` : '';
  const shown = page.steps.length < page.kept ? `; showing ${page.steps.length} from ${page.offset}` : '';
  return `transcript: ${page.total} step(s)${left}${shown}`;
}

/** `ledger.path` of the config file, when one is given or found here. */
function ledgerOfConfig(configFile: string | undefined): string | undefined {
  return loadConfig({ configPath: configFile }, process.env).ledger.path;
}
