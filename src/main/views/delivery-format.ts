import { BACKGROUND_RESULTS_CLOSE, BACKGROUND_RESULTS_OPEN } from '../../shared/prompts.js';
import { capHeadTail } from '../../shared/text-budget.js';
import { totalUsage } from '../../shared/usage.js';
import type { JobRecord } from '../ledger/ledger.js';

/**
 * Formats delivered jobs as the synthetic block put before a turn's input (never a fake user
 * or assistant turn). Each job gets a header line, the parsed result tag shown apart from its
 * text, and its text capped (head and tail) and quoted line by line with `| `, with `<` and
 * `>` escaped: a job's output can neither close the block nor forge another job's header.
 */
export function formatBackgroundResults(jobs: readonly JobRecord[], maxCharsPerJob: number): string {
  if (jobs.length === 0) return '';
  const parts = [BACKGROUND_RESULTS_OPEN];
  for (const job of jobs) parts.push(formatJob(job, maxCharsPerJob));
  parts.push(BACKGROUND_RESULTS_CLOSE);
  return parts.join('\n');
}

function formatJob(job: JobRecord, maxChars: number): string {
  const lines = jobHeadLines(job);
  const text = job.resultText ?? '';
  if (text.trim()) lines.push(...quoteLines(capHeadTail(text, maxChars)));
  else lines.push(NO_TEXT_LINE);
  return lines.join('\n');
}

/**
 * Every line break a reader (a model's tokenizer, a terminal, an editor) may honour: CRLF, CR,
 * LF, VT, FF, NEL and the Unicode line and paragraph separators. Quoting splits on all of them,
 * so no job text can start a line that is not quoted.
 */
export const LINE_BREAKS = /\r\n|[\n\v\f\r\u0085\u2028\u2029]/;
const LINE_BREAKS_ALL = new RegExp(`(?:${LINE_BREAKS.source})+`, 'g');

/** What stands for a result with no text. */
export const NO_TEXT_LINE = '| (no text)';

/** A job's text as block lines: each quoted with `| `, angle brackets escaped. */
export function quoteLines(text: string): string[] {
  return escapeAngles(text)
    .split(LINE_BREAKS)
    .map((line) => `| ${line}`);
}

/** How background results reach the parent (`delivery.format`). */
export type DeliveryFormat = 'forkpool' | 'remy';

/** What frames one result's part in a block: for the `remy` format, a `<tool_result>` element. */
export interface ResultWrap {
  open(job: Pick<JobRecord, 'id' | 'agent' | 'label' | 'parentToolId'>): string;
  close: string;
  /**
   * The part's body is the result text itself (escaped by {@link escapeElementTags}), not
   * forkpool's header and `| `-quoted lines; a job that did not end ok keeps its header line.
   */
  rawBody?: boolean;
}

/**
 * The tags of Remy's format a result text could close or forge (`<tool_result`, `</tool_result`,
 * `<background_results`, `</background_results`, any case, spaces after the slash): the `<` that
 * opens each becomes `&lt;` (three characters more). Everything else stays as the job wrote it.
 */
export const ELEMENT_TAG_AT = /<(?=\/?\s*(?:tool_result|background_results))/iy;
const ELEMENT_TAGS = new RegExp(ELEMENT_TAG_AT.source, 'gi');

export function escapeElementTags(text: string): string {
  return text.replace(ELEMENT_TAGS, '&lt;');
}

/** What stands for a result with no text in a raw body. */
export const NO_TEXT_RAW = '(no text)';

/**
 * Remy's element per result: `id` is the tool-call id of the backgrounded call that started the
 * job (its `agent_<name>` or spawn call; the job id for a job no call started), `job_id` the job
 * id (what read_background_result, cancel and restart take), `name` the configured agent it ran,
 * or for a fork of the parent (no agent) its label. Each passes through {@link sanitize}, so none
 * can close the element or forge an attribute.
 */
export const REMY_RESULT_WRAP: ResultWrap = {
  open: (job) => `<tool_result id="${sanitize(job.parentToolId ?? job.id)}" job_id="${sanitize(job.id)}" name="${sanitize(job.agent ?? job.label)}">`,
  close: '</tool_result>',
  rawBody: true,
};

/** The wrap of a format's results: none for `forkpool` (the header line says which job it is). */
export function resultWrapOf(format: DeliveryFormat): ResultWrap | undefined {
  return format === 'remy' ? REMY_RESULT_WRAP : undefined;
}

/** A job's header line, and its failure reason when it did not end ok. */
export function jobHeadLines(job: JobRecord): string[] {
  const facts = [`job ${job.id}`, `status ${job.status ?? 'unknown'}`];
  // A typed job's text is its value's JSON (its record's `data`): said, so the reader parses it.
  if (job.data !== undefined) facts.push('typed result as JSON');
  if (job.tag && job.tag.filesTouched.length > 0) facts.push(`files touched: ${job.tag.filesTouched.map(sanitize).join(', ')}`);
  if (job.startedAt !== undefined && job.endedAt !== undefined) facts.push(`${((job.endedAt - job.startedAt) / 1000).toFixed(1)} s`);
  const tokens = totalUsage(job.usage).totalTokens;
  if (tokens > 0) facts.push(`${tokens} tokens`);
  if (job.deferredUntil !== undefined) facts.push(`runs again at ${new Date(job.deferredUntil).toISOString()}`);
  const verb =
    job.status === 'ok' || job.status === 'partial' || job.status === 'error'
      ? 'completed'
      : job.status === 'failed'
        ? 'failed'
        : job.status === 'timed_out'
          ? 'timed out'
          : job.status === 'deferred'
            ? 'deferred its next turn'
            : 'was cancelled';
  const header = `[Background agent "${sanitize(job.label)}" ${verb} — ${facts.join(', ')}]`;
  const lines: string[] = [header];
  // One line: a reason that spans lines would read as result text.
  if (job.error && job.status !== 'ok')
    lines.push(`| reason: ${escapeAngles(job.error.message.replace(LINE_BREAKS_ALL, ' ').replace(/\s+/g, ' ')).slice(0, 500)}`);
  return lines;
}

export function escapeAngles(text: string): string {
  return text.replace(/</g, '&lt;').replace(/>/g, '&gt;');
}

/** A label or path inside a header: one line, no quotes or angle brackets, bounded. */
export function sanitize(value: string): string {
  const flat = value
    .replace(LINE_BREAKS_ALL, ' ')
    .replace(/\t+/g, ' ')
    .replace(/["<>[\]]/g, "'")
    .trim();
  return flat.length > 80 ? `${flat.slice(0, 79)}…` : flat;
}

/** The header of the block of alerts put before a turn's results. */
export const BACKGROUND_REPORTS_HEADER = '[Background reports]';

/**
 * Alerts jobs sent since the last turn, as one block before the results: one line each, the
 * job named, the message quoted and escaped like a result (it cannot forge a header or a tag).
 */
export function formatBackgroundReports(alerts: ReadonlyArray<{ jobId: string; label: string; severity: string; message: string }>, dropped = 0): string {
  if (alerts.length === 0 && dropped === 0) return '';
  const lines = [BACKGROUND_REPORTS_HEADER];
  if (dropped > 0) lines.push(`(${dropped} older report(s) were dropped: too many arrived at once)`);
  for (const alert of alerts) {
    lines.push(`- job ${alert.jobId} "${sanitize(alert.label)}" (${alert.severity}):`);
    for (const line of escapeAngles(alert.message).split(LINE_BREAKS)) lines.push(`  | ${line}`);
  }
  return lines.join('\n');
}
