import type { JobRecord } from '../main/ledger.js';
import { totalUsage, type UsageByModel } from '../shared/usage.js';

export function seconds(ms: number | undefined): string {
  return ms === undefined ? '?' : `${(ms / 1000).toFixed(1)}s`;
}

export function jobLine(job: JobRecord): string {
  const mark = job.status === 'ok' ? '✓' : job.status === 'partial' ? '◐' : job.status === 'cancelled' ? '⊘' : '✗';
  const took = job.startedAt !== undefined && job.endedAt !== undefined ? seconds(job.endedAt - job.startedAt) : '-';
  const tokens = totalUsage(job.usage).totalTokens;
  const why = job.error && job.status !== 'ok' && job.status !== 'partial' ? ` — ${job.error.message.slice(0, 160)}` : '';
  return `${mark} ${job.id} "${job.label}" ${job.status} in ${took}, ${tokens} tokens${why}`;
}

/** The public shape of a finished job, as `--json` and `fanout` print it (no config, no secrets). */
export function jobJson(job: JobRecord): Record<string, unknown> {
  return {
    id: job.id,
    label: job.label,
    status: job.status,
    endedBy: job.endedBy,
    stopReason: job.stopReason,
    result: job.resultText ?? '',
    tag: job.tag ?? null,
    usage: job.usage,
    attempts: job.attempts,
    notes: job.notes,
    queuedAt: iso(job.queuedAt),
    startedAt: iso(job.startedAt),
    endedAt: iso(job.endedAt),
    error: job.error ? { code: job.error.code, message: job.error.message } : null,
  };
}

function iso(ms: number | undefined): string | null {
  return ms === undefined ? null : new Date(ms).toISOString();
}

/** Token totals by bucket and model, one line each. */
export function usageLines(byBucket: Record<string, UsageByModel>): string[] {
  const lines: string[] = [];
  for (const [bucket, byModel] of Object.entries(byBucket)) {
    for (const [model, u] of Object.entries(byModel)) {
      lines.push(`  ${bucket.padEnd(20)} ${model.padEnd(24)} ${String(u.requests).padStart(5)} requests ${String(u.promptTokens).padStart(9)} in ${String(u.completionTokens).padStart(8)} out`);
    }
  }
  return lines;
}
