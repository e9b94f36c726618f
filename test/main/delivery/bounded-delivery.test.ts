/**
 * Bounded delivery with lossless paging: one turn's background results share one budget, and
 * what does not fit is read back, byte for byte, with read_background_result. The parent runs
 * on this thread, its jobs in the real Piscina pool, the sim as the model.
 */
import { describe, expect, it } from 'vitest';
import { AgentSession } from '../../../src/main/session/agent-session.js';
import { planDelivery, shareFairly } from '../../../src/main/delivery/delivery-budget.js';
import { DeliveryLedger, type JobRecord } from '../../../src/main/ledger/ledger.js';
import { resultPageTool } from '../../../src/main/delivery/result-pages.js';
import { BACKGROUND_RESULTS_CLOSE, BACKGROUND_RESULTS_OPEN } from '../../../src/shared/prompts.js';
import type { ToolDefinition } from '../../../src/shared/tools/types.js';
import { toolNames, useCleanup, ended, makeConfig, makeWorkspace, startSim, watchManager } from '../../helpers/index.js';

const cleanups = useCleanup();

const noContext = {} as never;
const JOBS = 20;
const ANSWER_CHARS = 50_000;
const BUDGET_TOKENS = 12_000;
/** Twenty jobs and two parent turns: generous, for a machine with every core busy. */
const HEAVY_TIMEOUT_MS = 240_000;

/** Every byte of a job's result, read page by page through the tool; checks each page's header. */
async function readAll(tool: ToolDefinition, jobId: string, limit?: number): Promise<{ text: string; pages: number }> {
  let text = '';
  let pages = 0;
  for (let offset = 0; ; pages++) {
    const page = await tool.run({ job_id: jobId, offset, ...(limit ? { limit } : {}) }, noContext);
    const newline = page.indexOf('\n');
    const header = page.slice(0, newline);
    const m = /^\[job (\S+) result: characters (\d+) to (\d+) of (\d+); (?:next page: offset (\d+)|end of the result)/.exec(header);
    expect(m, header).not.toBeNull();
    const [from, to, total] = [Number(m?.[2]), Number(m?.[3]), Number(m?.[4])];
    expect(from).toBe(offset);
    const body = page.slice(newline + 1);
    expect(body.length).toBe(to - from);
    text += body;
    if (to === total) return { text, pages: pages + 1 };
    offset = to;
  }
}

/** The shown head of one job in a block, with the quoting and escaping taken off. */
function shownHead(block: string, jobId: string): string {
  const start = block.indexOf(`job ${jobId},`);
  const lines = block.slice(block.indexOf('\n', start) + 1).split('\n');
  const quoted: string[] = [];
  for (const line of lines) {
    if (!line.startsWith('| ')) break;
    quoted.push(line.slice(2));
  }
  return quoted.join('\n').replace(/&lt;/g, '<').replace(/&gt;/g, '>');
}

describe('bounded delivery', () => {
  it(
    `${JOBS} jobs with ${ANSWER_CHARS / 1000} KB answers, delivered in one turn, stay under the budget, and every byte reads back through read_background_result`,
    async () => {
      const root = await makeWorkspace(cleanups);
      // Big stream chunks: 1 MB of answers travel as a few events per job.
      const sim = await startSim(cleanups, { maxTokensPerChunk: 1_000_000 });
      const config = makeConfig(sim, root, { maxConcurrent: 8, isolation: 'shared' }, { delivery: { maxInjectedTokens: BUDGET_TOKENS } });
      const session = new AgentSession({ config, closeExecutor: true });
      watchManager(session.manager);
      cleanups.add(() => session.close({ timeoutMs: 2_000 }));
      const deliveries: JobRecord[][] = [];
      session.on('delivered', ({ jobs }) => deliveries.push(jobs));

      const questions = Array.from({ length: JOBS }, (_, i) => `${i + 1}. Report finding set ${i + 1} [sim-answer-chars: ${ANSWER_CHARS}]`);
      await session.submit(['Research these:', ...questions].join('\n'));
      await session.onIdle();

      // One turn delivered all twenty.
      expect(deliveries).toHaveLength(1);
      const delivered = deliveries[0] as JobRecord[];
      expect(delivered).toHaveLength(JOBS);
      const withBlock = sim.requests.filter(
        (r) => r.body.messages.at(-1)?.role === 'user' && String(r.body.messages.at(-1)?.content).includes(BACKGROUND_RESULTS_OPEN),
      );
      expect(withBlock).toHaveLength(1);
      const input = String(withBlock[0]?.body.messages.at(-1)?.content);
      const block = input.slice(input.indexOf(BACKGROUND_RESULTS_OPEN), input.indexOf(BACKGROUND_RESULTS_CLOSE) + BACKGROUND_RESULTS_CLOSE.length);
      // Under the budget (4 characters a token, the estimate the budget is stated in).
      expect(Math.ceil(block.length / 4)).toBeLessThanOrEqual(BUDGET_TOKENS);
      // The budget was used, not wasted: over 90% of it.
      expect(block.length).toBeGreaterThan(BUDGET_TOKENS * 4 * 0.9);
      expect(toolNames(withBlock[0] as never)).toContain('read_background_result');

      const tool = resultPageTool({ manager: session.manager, deliveries: session.deliveries, currentTurn: () => 99, pageMaxChars: 7_000 });
      const shown: number[] = [];
      for (const job of delivered) {
        const record = session.manager.get(job.id) as JobRecord;
        const full = record.resultText as string;
        expect(full.length).toBeGreaterThanOrEqual(ANSWER_CHARS - 1);
        // The block says how much was left out, and from where to read it.
        const [from, to] = record.resultUnread as [number, number];
        expect(block).toContain(`[… ${to - from} characters omitted (characters ${from} to ${to} of ${full.length})`);
        expect(block).toContain(`read_background_result(job_id: "${job.id}", offset: ${from})`);
        // What the block showed is the result's own head, unchanged.
        expect(shownHead(block, job.id)).toBe(full.slice(0, from));
        shown.push(from + (full.length - to));
        // Every byte, through the tool.
        const { text, pages } = await readAll(tool, job.id);
        expect(text).toBe(full);
        expect(pages).toBe(Math.ceil(full.length / 7_000));
        // Read to the end: nothing is left unread in the ledger.
        expect(session.manager.get(job.id)?.resultUnread).toBeUndefined();
      }
      // A fair share: every result got about the same room.
      expect(Math.min(...shown)).toBeGreaterThan(Math.max(...shown) * 0.9);
    },
    HEAVY_TIMEOUT_MS,
  );

  it(
    'read_background_result refuses bad ids and offsets with clear tool errors, and reading early counts as delivery',
    async () => {
      const root = await makeWorkspace(cleanups);
      const sim = await startSim(cleanups, { maxTokensPerChunk: 1_000_000 });
      const config = makeConfig(sim, root);
      const session = new AgentSession({ config, closeExecutor: true });
      watchManager(session.manager);
      cleanups.add(() => session.close({ timeoutMs: 2_000 }));
      // Wave 99 is never sealed: no follow-up delivers it behind the test's back.
      const job = session.manager.spawn({ task: 'Report [sim-answer-chars: 3000]', label: 'early', wave: 99 });
      const record = await ended(session.manager, job.id);
      const length = (record.resultText as string).length;
      const tool = resultPageTool({ manager: session.manager, deliveries: session.deliveries, currentTurn: () => 4, pageMaxChars: 1_000 });
      await expect(tool.run({ job_id: 'bg-404' }, noContext)).rejects.toMatchObject({
        code: 'JOB_UNKNOWN',
        message: expect.stringMatching(/no background job with id or name "bg-404"/),
      });
      await expect(tool.run({ job_id: job.id, offset: length + 1 }, noContext)).rejects.toMatchObject({
        code: 'TOOL_ARGUMENTS_INVALID',
        message: expect.stringContaining(`offset ${length + 1} is past the end of job ${job.id}'s result, which has ${length} characters`),
      });
      // A limit over the page size is capped, and says so.
      const first = await tool.run({ job_id: job.id, limit: 50_000 }, noContext);
      expect(first.split('\n')[0]).toBe(`[job ${job.id} result: characters 0 to 1000 of ${length}; next page: offset 1000 (limit capped at 1000)]`);
      // It was read before any turn delivered it: delivered now, never injected again.
      expect(session.manager.get(job.id)).toMatchObject({ deliveredInTurn: 4, resultUnread: [1000, length] });
      expect(session.deliveries.undeliveredCount).toBe(0);
      const end = await tool.run({ job_id: job.id, offset: length }, noContext);
      expect(end).toBe(`[job ${job.id} result: characters ${length} to ${length} of ${length}; end of the result]\n`);
    },
    HEAVY_TIMEOUT_MS,
  );
});

describe('planDelivery', () => {
  const record = (id: string, text: string): JobRecord => ({
    id,
    label: id,
    task: 't',
    role: 'primary',
    wave: 1,
    state: 'ended',
    status: 'ok',
    resultText: text,
    usage: {},
    iterations: 1,
    attempts: 1,
    notes: [],
    queuedAt: 0,
  });

  it('a result shorter than its share gives the rest back to the others', () => {
    const short = record('bg-1', 'short answer');
    const long1 = record('bg-2', 'a'.repeat(30_000));
    const long2 = record('bg-3', 'b'.repeat(30_000));
    const plan = planDelivery({ jobs: [short, long1, long2], budgetChars: 6_000, perJobMaxChars: 100_000 });
    expect(plan.block.length).toBeLessThanOrEqual(6_000);
    expect(plan.block).toContain('| short answer');
    expect(plan.unread.has('bg-1')).toBe(false);
    const shownOf = (id: string, total: number) => {
      const [from, to] = plan.unread.get(id) as [number, number];
      return total - (to - from);
    };
    // An equal third would be under 2,000 each; the short one's unused room went to the long ones.
    expect(shownOf('bg-2', 30_000)).toBeGreaterThan(2_100);
    expect(Math.abs(shownOf('bg-2', 30_000) - shownOf('bg-3', 30_000))).toBeLessThanOrEqual(2);
  });

  it('jobs whose header does not fit wait for the next turn, and the block says how many', () => {
    const jobs = Array.from({ length: 40 }, (_, i) => record(`bg-${i + 1}`, 'x'.repeat(1_000)));
    const plan = planDelivery({ jobs, budgetChars: 4_000, perJobMaxChars: 6_000 });
    expect(plan.block.length).toBeLessThanOrEqual(4_000);
    expect(plan.deferred).toBeGreaterThan(0);
    expect(plan.delivered.length + plan.deferred).toBe(40);
    expect(plan.block).toContain(`[${plan.deferred} more background result(s) did not fit`);
  });

  it('shareFairly is max-min fair', () => {
    expect(shareFairly([10, 100, 100], 150)).toEqual([10, 70, 70]);
    expect(shareFairly([10, 20], 1_000)).toEqual([10, 20]);
    expect(shareFairly([0, 50, 50, 50], 90)).toEqual([0, 30, 30, 30]);
  });
});

describe('retention keeps a result delivered in part until it is read to the end', () => {
  it('keepResultsMs 0 drops whole deliveries at once, but not a partly read one', () => {
    const ledger = new DeliveryLedger({ keepResults: 10, keepResultsMs: 0, keepRecords: 10 });
    for (const id of ['bg-1', 'bg-2']) {
      ledger.add({ id, label: id, task: 't', role: 'primary', wave: 1 });
      ledger.markRunning(id, 1);
      ledger.markEnded(id, { status: 'ok', endedBy: 'completed', resultText: 'r'.repeat(100), usage: {}, iterations: 1 });
    }
    ledger.newId();
    ledger.newId();
    ledger.drain(1, () => true, Date.now(), new Map([['bg-2', [40, 100] as [number, number]]]));
    expect(ledger.get('bg-1')?.resultDropped).toBe(true);
    expect(ledger.get('bg-2')?.resultText).toHaveLength(100);
    // A read that does not reach the unread part changes nothing; one that does moves it on.
    ledger.markShown('bg-2', 60, 80);
    expect(ledger.get('bg-2')?.resultUnread).toEqual([40, 100]);
    ledger.markShown('bg-2', 40, 70);
    expect(ledger.get('bg-2')?.resultUnread).toEqual([70, 100]);
    expect(ledger.get('bg-2')?.resultText).toHaveLength(100);
    // Read to the end: now it is a delivered result like any other (and this policy drops it).
    ledger.markShown('bg-2', 70, 100);
    expect(ledger.get('bg-2')?.resultUnread).toBeUndefined();
    expect(ledger.get('bg-2')?.resultDropped).toBe(true);
  });
});
