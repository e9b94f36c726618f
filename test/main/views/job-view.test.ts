/**
 * One JSON view of a job: the server's summary and detail and the CLI's JSON line are derived
 * from `jobView`, so a field that two surfaces share says the same thing in both.
 */
import { describe, expect, it } from 'vitest';
import type { JobRecord } from '../../../src/main/ledger/job-record.js';
import { jobJson, jobView } from '../../../src/main/views/job-view.js';
import { jobDetail, jobSummary } from '../../../src/server/job-view.js';

const ended: JobRecord = {
  id: 'j3',
  label: 'scan',
  task: `look at ${'x'.repeat(300)}`,
  role: 'primary',
  agent: 'reviewer',
  name: 'scan-a',
  parentJobId: 'j1',
  depth: 2,
  wave: 1,
  state: 'ended',
  status: 'partial',
  endedBy: 'cooperative',
  stopReason: 'budget_exceeded',
  resultText: 'found two things',
  error: { name: 'ForkpoolError', code: 'BUDGET_EXCEEDED', message: 'maxTurns 3 reached', cause: { name: 'Error', code: 'INTERNAL', message: 'why' } },
  usage: { m: { promptTokens: 10, completionTokens: 5, totalTokens: 15, requests: 2 } },
  budget: { maxTurns: 3 },
  budgetExceeded: 'maxTurns',
  iterations: 3,
  attempts: 1,
  notes: ['a note'],
  queuedAt: 1_000,
  startedAt: 2_000,
  endedAt: 5_500,
  deliveredInTurn: 2,
};

describe('jobView', () => {
  it('is what the server summary, the server detail and the CLI line show, field for field', () => {
    const view = jobView(ended, { now: 9_000 });
    expect(view).toMatchObject({
      name: 'scan-a',
      status: 'partial',
      stopReason: 'budget_exceeded',
      tokens: 15,
      elapsedMs: 3_500,
      delivered: true,
      error: { code: 'BUDGET_EXCEEDED', message: 'maxTurns 3 reached' },
    });
    const summary = jobSummary(ended, undefined, 9_000);
    const detail = jobDetail(ended, undefined);
    for (const [key, value] of Object.entries(summary)) {
      // The live fields come from the events the server follows, not from the record.
      if (key === 'taskPreview' || key === 'currentTool' || key === 'toolCalls' || key === 'retrying') continue;
      expect([key, value]).toEqual([key, view[key as keyof typeof view]]);
    }
    for (const key of ['task', 'resultText', 'resultDropped', 'tag', 'stopReason', 'errorDetail', 'usage', 'notes', 'approvals'] as const)
      expect([key, detail[key]]).toEqual([key, view[key]]);
    expect(summary.taskPreview).toBe(`${ended.task.slice(0, 197)}...`);
    const line = jobJson(ended);
    for (const key of [
      'id',
      'label',
      'name',
      'agent',
      'parentJobId',
      'depth',
      'status',
      'endedBy',
      'stopReason',
      'tag',
      'usage',
      'budget',
      'budgetExceeded',
      'attempts',
      'notes',
      'error',
    ] as const) {
      expect([key, line[key]]).toEqual([key, view[key]]);
    }
    // Where the CLI differs, it says so in its README: ISO times and the answer as `result`.
    expect(line).toMatchObject({ result: 'found two things', queuedAt: new Date(1_000).toISOString(), endedAt: new Date(5_500).toISOString() });
  });

  it('leaves out of the CLI line what the record does not have, and shows null in the API', () => {
    const queued: JobRecord = {
      id: 'j1',
      label: 'l',
      task: 't',
      role: 'user',
      wave: null,
      state: 'queued',
      usage: {},
      iterations: 0,
      attempts: 0,
      notes: [],
      queuedAt: 1,
    };
    const line = JSON.parse(JSON.stringify(jobJson(queued))) as Record<string, unknown>;
    for (const key of ['name', 'parentToolId', 'backgrounded', 'children', 'treeUsage', 'status', 'endedBy', 'stopReason'])
      expect(line).not.toHaveProperty(key);
    expect(line).toMatchObject({ result: '', startedAt: null, error: null });
    expect(jobSummary(queued, undefined)).toMatchObject({ status: null, endedBy: null, name: null, elapsedMs: 0, tokens: 0 });
  });
});
