/**
 * A durable ledger's rows are checked as they are read back: a row whose JSON does not parse,
 * or whose record lacks what recovery and delivery rely on (an id, a state, attempts, notes, an
 * ending for an ended job), is reported with what was found instead of being trusted (or
 * crashing the process that resumes). Plain data fields beyond these pass as they are.
 */
import { z } from 'zod';
import { JOB_ROLES } from '../../shared/protocol.js';
import { ENDED_BY, JOB_STATES, JOB_STATUSES, type JobRecord } from './job-record.js';
import type { InvalidRow, StoredJob, StoredSpec } from './ledger-store.js';

export type { InvalidRow } from './ledger-store.js';

const recordSchema = z
  .looseObject({
    id: z.string().min(1),
    label: z.string(),
    task: z.string(),
    role: z.enum(JOB_ROLES),
    wave: z.number().int().nullable(),
    state: z.enum(JOB_STATES),
    status: z.enum(JOB_STATUSES).optional(),
    endedBy: z.enum(ENDED_BY).optional(),
    resultText: z.string().optional(),
    usage: z.record(z.string(), z.unknown()),
    iterations: z.number().int().min(0),
    attempts: z.number().int().min(0),
    notes: z.array(z.string()),
    queuedAt: z.number(),
    deliveredInTurn: z.number().int().min(0).optional(),
  })
  .refine((record) => record.state !== 'ended' || (record.status !== undefined && record.endedBy !== undefined), {
    message: 'an ended job without status or endedBy',
  });

const MAX_FOUND_CHARS = 120;

/** What a row held, cut short and on one line, for a report. */
function found(text: string): string {
  const flat = JSON.stringify(text.length > MAX_FOUND_CHARS ? `${text.slice(0, MAX_FOUND_CHARS)}…` : text);
  return flat.replace(/[\u0000-\u001f\u007f-\u009f\u2028\u2029]/g, '');
}

/** One `jobs` row as a stored job, or what is wrong with it. */
export function parseJobRow(row: { id: string; position: number; record: string; spec: string | null }): StoredJob | InvalidRow {
  let raw: unknown;
  try {
    raw = JSON.parse(row.record);
  } catch {
    return { id: row.id, problem: `its record is not JSON: found ${found(row.record)}` };
  }
  const parsed = recordSchema.safeParse(raw, { reportInput: true });
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    if (!issue || issue.path.length === 0) return { id: row.id, problem: `the record: ${issue?.message ?? 'invalid'}: found ${found(row.record)}` };
    const value = issue.input === undefined ? 'nothing' : found(JSON.stringify(issue.input) ?? typeof issue.input);
    return { id: row.id, problem: `field "${issue.path.join('.')}": ${issue.message}; found ${value}` };
  }
  if (parsed.data.id !== row.id) return { id: row.id, problem: `its record names another job (${found(parsed.data.id)})` };
  let spec: StoredSpec | undefined;
  try {
    spec = row.spec === null ? undefined : (JSON.parse(row.spec) as StoredSpec);
  } catch {
    return { id: row.id, problem: `its spec is not JSON: found ${found(row.spec ?? '')}` };
  }
  return { record: parsed.data as unknown as JobRecord, position: row.position, spec };
}

export function isInvalidRow(row: StoredJob | InvalidRow): row is InvalidRow {
  return 'problem' in row;
}
