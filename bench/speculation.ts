/**
 * `npm run bench:speculation`: what speculative spawns save. A parent agent on a scripted sim
 * spawns, each turn, `guesses` jobs it may not need and `real` jobs it does, then names only
 * `referred` of the guesses in its answer; a follow-up turn takes the wave's results. The same
 * script runs twice per round on the same sims: as the baseline (every spawn an ordinary job,
 * all run to their end) and with `speculative: true` on the guesses (the unreferred ones are
 * cancelled as the turn ends, and real jobs launch first). Printed: model calls, tokens, wall
 * time and cost of each, and the speculative run's ratios against the baseline of the same run.
 *
 *   node dist-bench/bench/speculation.js [--turns 3] [--guesses 4] [--real 2] [--referred 1] [--cap 4] [--rounds 3] [--quick]
 */
import { mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { isEntry } from './entry.js';
import { parseArgs } from 'node:util';
import { AgentSession } from '#dist/main/session/agent-session.js';
import { parseConfig } from '#dist/shared/config.js';
import { createModelClient } from '#dist/shared/model-call.js';
import { costOf, type ModelTable } from '#dist/shared/models.js';
import { addModelUsage, mergeUsageByModel, totalUsage, type UsageByModel } from '#dist/shared/usage.js';
import { startSimServer, type ScriptStep } from '#dist/sim/index.js';
import { startSimProcess } from './sim-process.js';

export interface SpeculationPlan {
  turns: number;
  guesses: number;
  real: number;
  referred: number;
  /** `background.maxConcurrent`. */
  cap: number;
  rounds: number;
}

export interface SpeculationResult {
  mode: 'baseline' | 'speculative';
  /** Model calls: the parent's and its jobs'. */
  calls: number;
  jobCalls: number;
  tokens: number;
  wallMs: number;
  costUsd: number;
  /** Jobs dropped as guesses, and results the parent received (drains and checks). */
  dropped: number;
  delivered: number;
}

/** A made-up price, the same for both modes, so the cost column is comparable: $3 in, $15 out per million tokens. */
const PRICES: ModelTable = { models: { 'forkpool-sim': { inputUsdPerMTok: 3, outputUsdPerMTok: 15 } } };
/** Jobs: 3 model requests each (researchSteps 3), 40-50 ms a request, in a process of their own. */
const JOB_SIM = { latencyMs: 40, jitterMs: 10, seed: 11, researchSteps: 3 };
/** The parent's two calls per turn (spawn, answer) and its follow-up take 40 ms each. */
const PARENT_LATENCY_MS = 40;
const FILES: Record<string, string> = {
  'src/retry.ts':
    '// Retry with exponential backoff and jitter.\nexport function retryBackoff(attempt: number): number {\n  return Math.min(8000, 500 * 2 ** attempt);\n}\n',
  'src/cache.ts': '// An LRU cache with a size limit.\nexport class LruCache {}\n',
  'README.md': '# demo workspace\nThe retry backoff lives in src/retry.ts.\n',
};

/** The parent's whole script: per turn its spawns, an answer naming `referred` guesses, and the follow-up's answer. */
function parentScript(plan: SpeculationPlan, speculative: boolean): ScriptStep[] {
  const steps: ScriptStep[] = [];
  for (let turn = 1; turn <= plan.turns; turn++) {
    const spawn = (kind: 'guess' | 'real', i: number) => ({
      name: 'spawn_background_agent',
      arguments: {
        task: `Where is the retry backoff implemented? Answer from the files in the workspace. (${kind} ${turn}.${i})`,
        label: `${kind} ${turn}.${i}`,
        name: `${kind}-t${turn}-${i}`,
        ...(kind === 'guess' && speculative ? { speculative: true } : {}),
      },
    });
    const guesses = Array.from({ length: plan.guesses }, (_, i) => spawn('guess', i));
    const real = Array.from({ length: plan.real }, (_, i) => spawn('real', i));
    steps.push({ toolCalls: [...guesses, ...real] });
    const named = Array.from({ length: plan.referred }, (_, i) => `guess-t${turn}-${i}`);
    steps.push({ content: `I will wait for the real surveys${named.length > 0 ? ` and for ${named.join(', ')}` : ''}.` });
    steps.push({ content: 'Done: the results are in.' });
  }
  return steps;
}

async function runMode(plan: SpeculationPlan, speculative: boolean, jobsUrl: string, workspaceRoot: string): Promise<SpeculationResult> {
  const parentSim = await startSimServer({ latencyMs: PARENT_LATENCY_MS, script: parentScript(plan, speculative) });
  const config = parseConfig({
    baseUrl: jobsUrl,
    workspaceRoot,
    maxRetries: 2,
    ...PRICES,
    background: { maxConcurrent: plan.cap, niceIncrement: 0, closeTimeoutMs: 5_000 },
  });
  const session = new AgentSession({
    config,
    closeExecutor: true,
    client: createModelClient({ baseUrl: parentSim.url, apiKey: 'bench', requestTimeoutMs: 30_000 }),
  });
  let jobCalls = 0;
  let usage: UsageByModel = {};
  let delivered = 0;
  // Every job model call counts, also one whose job was cancelled before it reported an ending.
  session.manager.on('progress', ({ event }) => {
    if (event.type !== 'model_response') return;
    jobCalls++;
    usage = addModelUsage(usage, event.model, event.usage);
  });
  session.on('turn-result', (result) => (usage = mergeUsageByModel(usage, result.usage)));
  session.on('delivered', ({ jobs }) => (delivered += jobs.length));
  try {
    const started = performance.now();
    for (let turn = 1; turn <= plan.turns; turn++) {
      await session.submit(`Survey the retry code, part ${turn}.`);
      await session.onIdle();
    }
    const wallMs = performance.now() - started;
    parentSim.assertScriptDone();
    const jobs = session.manager.jobs();
    return {
      mode: speculative ? 'speculative' : 'baseline',
      calls: parentSim.requests.length + jobCalls,
      jobCalls,
      tokens: totalUsage(usage).totalTokens,
      wallMs,
      costUsd: costOf(PRICES, usage).usd,
      dropped: jobs.filter((job) => job.speculative === 'dropped').length,
      delivered,
    };
  } finally {
    await session.close({ timeoutMs: 5_000 });
    await parentSim.close();
  }
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor((sorted.length - 1) / 2)] as number;
}

/** Per mode, each figure's median over the rounds. */
function medianOf(rounds: SpeculationResult[]): SpeculationResult {
  const first = rounds[0] as SpeculationResult;
  const m = (pick: (r: SpeculationResult) => number) => median(rounds.map(pick));
  return {
    mode: first.mode,
    calls: m((r) => r.calls),
    jobCalls: m((r) => r.jobCalls),
    tokens: m((r) => r.tokens),
    wallMs: m((r) => r.wallMs),
    costUsd: m((r) => r.costUsd),
    dropped: m((r) => r.dropped),
    delivered: m((r) => r.delivered),
  };
}

export function speculationTable(plan: SpeculationPlan, baseline: SpeculationResult, speculative: SpeculationResult): string {
  const ratio = (a: number, b: number) => (b === 0 ? '–' : (a / b).toFixed(2));
  const row = (r: SpeculationResult) =>
    `| ${r.mode} | ${r.calls} (${r.jobCalls}) | ${r.tokens} | ${(r.wallMs / 1000).toFixed(2)} | $${r.costUsd.toFixed(4)} | ${r.dropped} | ${r.delivered} |`;
  return [
    `Speculative jobs: ${plan.turns} turns, each spawning ${plan.guesses} guesses + ${plan.real} real jobs and referring to ${plan.referred} guess(es); cap ${plan.cap}; median of ${plan.rounds} round(s)`,
    '',
    "| mode | model calls (jobs') | tokens | wall s | cost | dropped | results delivered |",
    '|---|---:|---:|---:|---:|---:|---:|',
    row(baseline),
    row(speculative),
    '',
    `speculative / baseline: model calls ${ratio(speculative.calls, baseline.calls)}, job model calls ${ratio(speculative.jobCalls, baseline.jobCalls)}, ` +
      `tokens ${ratio(speculative.tokens, baseline.tokens)}, wall time ${ratio(speculative.wallMs, baseline.wallMs)}, cost ${ratio(speculative.costUsd, baseline.costUsd)}`,
  ].join('\n');
}

export async function runSpeculationBench(
  plan: SpeculationPlan,
  log: (line: string) => void,
): Promise<{ baseline: SpeculationResult; speculative: SpeculationResult; table: string }> {
  const root = realpathSync(mkdtempSync(path.join(os.tmpdir(), 'forkpool-speculation-')));
  for (const [file, text] of Object.entries(FILES)) {
    mkdirSync(path.dirname(path.join(root, file)), { recursive: true });
    writeFileSync(path.join(root, file), text);
  }
  const jobsSim = await startSimProcess(JOB_SIM);
  try {
    const runs: Record<'baseline' | 'speculative', SpeculationResult[]> = { baseline: [], speculative: [] };
    for (let round = 1; round <= plan.rounds; round++) {
      // Alternating, so a machine that gets busier in the middle weighs on both modes alike.
      for (const speculative of round % 2 === 1 ? [false, true] : [true, false]) {
        const result = await runMode(plan, speculative, jobsSim.url, root);
        log(`round ${round} ${result.mode}: ${result.calls} calls, ${result.tokens} tokens, ${(result.wallMs / 1000).toFixed(2)} s, ${result.dropped} dropped`);
        runs[result.mode].push(result);
      }
    }
    const baseline = medianOf(runs.baseline);
    const speculative = medianOf(runs.speculative);
    return { baseline, speculative, table: speculationTable(plan, baseline, speculative) };
  } finally {
    await jobsSim.stop();
    rmSync(root, { recursive: true, force: true });
  }
}

export async function speculationMain(argv: string[]): Promise<number> {
  try {
    const { values } = parseArgs({
      args: argv,
      options: {
        turns: { type: 'string' },
        guesses: { type: 'string' },
        real: { type: 'string' },
        referred: { type: 'string' },
        cap: { type: 'string' },
        rounds: { type: 'string' },
        quick: { type: 'boolean' },
      },
      strict: true,
    });
    const int = (name: string, value: string | undefined, fallback: number, min: number, max: number): number => {
      if (value === undefined) return fallback;
      const n = Number(value);
      if (!Number.isInteger(n) || n < min || n > max) throw new RangeError(`--${name}: expected an integer from ${min} to ${max}, received "${value}"`);
      return n;
    };
    const quick = values.quick ?? false;
    const guesses = int('guesses', values.guesses, 4, 0, 50);
    const plan: SpeculationPlan = {
      turns: int('turns', values.turns, quick ? 1 : 3, 1, 50),
      guesses,
      real: int('real', values.real, 2, 1, 50),
      referred: int('referred', values.referred, 1, 0, guesses),
      cap: int('cap', values.cap, 4, 1, 100),
      rounds: int('rounds', values.rounds, quick ? 1 : 3, 1, 20),
    };
    const { speculative, table } = await runSpeculationBench(plan, (line) => process.stderr.write(`[bench:speculation] ${line}\n`));
    process.stdout.write(`${table}\n`);
    // Every referred guess and real job must have been delivered, and every other guess dropped.
    const expectedDropped = plan.turns * (plan.guesses - plan.referred);
    return speculative.dropped === expectedDropped && speculative.delivered === plan.turns * (plan.real + plan.referred) ? 0 : 1;
  } catch (error) {
    process.stderr.write(`bench:speculation: ${error instanceof Error ? error.message : String(error)}\n`);
    return error instanceof RangeError ? 2 : 1;
  }
}

if (isEntry(import.meta.url)) process.exitCode = await speculationMain(process.argv.slice(2));
