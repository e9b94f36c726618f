/**
 * The ideal schedule: the best wall time a cell could have, from the workload alone. Once per
 * workload and run, one job runs against the workload's simulator (forkpool's tool loop on this
 * thread, nothing else running) to learn what a job asks for: its model calls and its tool calls,
 * step by step. Each tool call is then replayed alone, single-threaded, and its CPU time
 * measured (`process.cpuUsage`, libuv's fs threads included). For a cell of J jobs, cap C, on
 * P cores, with k model calls of mean latency L per job and tool CPU T per job (T_chain: per step,
 * the larger of its longest call and its calls' CPU ÷ P, since the calls one step asks for at once
 * could at best run side by side on every core):
 *
 *   D     = k × L + T_chain                      one job alone, nothing waiting
 *   ideal = max( ceil(J / C) × D ,  J × T / P )   the cap's waves, or the cores busy with tools
 *
 * Both are lower bounds (a slot runs its jobs one after another; P cores can do no more than P
 * seconds of CPU per second), so efficiency = ideal ÷ measured is at most about 1. L is the
 * simulator's mean (latency + jitter / 2); the measured run also pays HTTP, JSON, scheduling and
 * the simulator's own CPU on the same cores, which the ideal leaves out.
 */
import { availableParallelism } from 'node:os';
import { performance } from 'node:perf_hooks';
import { createModelClient } from '#dist/shared/model-call.js';
import { parseConfig } from '#dist/shared/config.js';
import { backgroundSystemPrompt } from '#dist/shared/prompts.js';
import { runToolLoop } from '#dist/shared/tool-loop.js';
import { builtinTools } from '#dist/shared/tools/index.js';
import { toolPolicyFrom } from '#dist/shared/tools/policy.js';
import { resolveWorkspaceRoot } from '#dist/shared/tools/sandbox.js';
import { scrubEnv } from '#dist/shared/tools/secrets.js';
import type { ToolContext, ToolDefinition } from '#dist/shared/tools/types.js';
import { percentile, round3 } from './measure.js';
import type { Calibration, CellResult } from './types.js';

/** Each tool call is timed this many times after one untimed run; the median counts. */
const REPLAYS = 3;

export interface CalibrationInput {
  simUrl: string;
  workspace: string;
  task: string;
  sim: { latencyMs: number; jitterMs: number };
}

export async function calibrate(input: CalibrationInput): Promise<Calibration> {
  const config = parseConfig({ baseUrl: input.simUrl, workspaceRoot: input.workspace, maxRetries: 2 });
  const workspaceRoot = await resolveWorkspaceRoot(config.workspaceRoot, { allowBroad: config.allowBroadWorkspace });
  const context: Omit<ToolContext, 'signal'> = {
    workspaceRoot,
    limits: config.toolLimits,
    permissions: { check: async () => false },
    env: scrubEnv(process.env),
    policy: toolPolicyFrom(config),
  };
  const calls: Array<{ step: number; def: ToolDefinition; args: unknown }> = [];
  let step = 0;
  const recording = builtinTools(config.tools).map((def) => ({
    ...def,
    run: (args: unknown, ctx: ToolContext) => {
      calls.push({ step, def, args });
      return def.run(args, ctx);
    },
  }));
  const result = await runToolLoop({
    client: createModelClient(config),
    config,
    messages: [
      { role: 'system', content: backgroundSystemPrompt({ workspaceRoot }) },
      { role: 'user', content: input.task },
    ],
    tools: recording,
    toolContext: context,
    // A job's model calls: its budget's maxTurns, as a pool job's are.
    maxModelCalls: config.background.budget.maxTurns,
    onEvent: (event) => {
      if (event.type === 'model_request') step = event.iteration;
    },
  });
  if (result.stopReason !== 'final') throw new Error(`the calibration job ended ${result.stopReason}: ${result.error?.message ?? ''}`);

  const steps = new Map<number, Calibration['steps'][number]>();
  for (const call of calls) {
    const cpu: number[] = [];
    const wall: number[] = [];
    for (let i = 0; i <= REPLAYS; i++) {
      const cpu0 = process.cpuUsage();
      const t0 = performance.now();
      await call.def.run(call.args, { ...context, signal: new AbortController().signal }).catch(() => '');
      const used = process.cpuUsage(cpu0);
      // The first run warms the code and the page cache; it is not counted.
      if (i === 0) continue;
      wall.push(performance.now() - t0);
      cpu.push((used.user + used.system) / 1000);
    }
    const list = steps.get(call.step) ?? [];
    list.push({ name: call.def.name, cpuMs: round3(percentile(cpu, 50)), wallMs: round3(percentile(wall, 50)) });
    steps.set(call.step, list);
  }
  const cores = availableParallelism();
  const byStep = [...steps.entries()].sort(([a], [b]) => a - b).map(([, list]) => list);
  return {
    modelCalls: result.iterations,
    modelLatencyMs: input.sim.latencyMs + input.sim.jitterMs / 2,
    steps: byStep,
    toolCpuMs: round3(byStep.flat().reduce((sum, c) => sum + c.cpuMs, 0)),
    // A step's calls are independent: at best they run side by side on every core.
    chainToolMs: round3(byStep.reduce((sum, list) => sum + Math.max(0, ...list.map((c) => c.cpuMs), list.reduce((all, c) => all + c.cpuMs, 0) / cores), 0)),
    cores,
  };
}

/** The ideal wall time (ms) of `jobs` jobs under a cap of `concurrency`; see the formula above. */
export function idealWallMs(calibration: Calibration, jobs: number, concurrency: number): number {
  const job = calibration.modelCalls * calibration.modelLatencyMs + calibration.chainToolMs;
  const waves = Math.ceil(jobs / Math.max(1, concurrency)) * job;
  const cores = (jobs * calibration.toolCpuMs) / Math.max(1, calibration.cores);
  return round3(Math.max(waves, cores));
}

/** Fills a cell's `idealMs` and `efficiency`; notes a peer whose jobs made other model calls than the calibration's. */
export function applyIdeal(cell: CellResult, calibration: Calibration | undefined): CellResult {
  if (!calibration) return cell;
  const idealMs = idealWallMs(calibration, cell.jobs, cell.concurrency);
  const notes = [...cell.notes];
  if (cell.modelCallsPerJob !== undefined && Math.abs(cell.modelCallsPerJob - calibration.modelCalls) > 0.01) {
    notes.push(`${cell.modelCallsPerJob} model calls per job, the calibration job made ${calibration.modelCalls}: not the same jobs`);
  }
  return { ...cell, idealMs, efficiency: cell.wallMs > 0 ? round3(idealMs / cell.wallMs) : null, notes };
}
