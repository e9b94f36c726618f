/**
 * `npm run bench`: runs the matrix (workloads × fan-outs × executors), each
 * cell in its own process against a simulator in another process, and writes
 * `<out>/<name>.json`, `<out>/<name>.md` and SVG charts. Stops by itself; kills every child.
 *
 *   npm run bench -- [--quick] [--only io|cpu|scale|parse|adaptive] [--executors a,b] [--fanouts 10,100] [--out DIR] [--name N] [--cpu-prof]
 *
 * (`npm run bench` builds the library and the bench first, then runs `node dist-bench/bench/run.js`.)
 */
import { fork, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { isEntry } from './entry.js';
import { parseArgs } from 'node:util';
import { runAdaptiveBench } from './adaptive.js';
import { sharedTasksPerThread } from './cell.js';
import { writeCharts } from './charts.js';
import { peersSection } from './peers/report.js';
import { applyIdeal, calibrate } from './ideal.js';
import { builtBenchFile } from './paths.js';
import { checkTargets, markdownReport, markdownTable, targetsTable } from './report.js';
import { startSimProcess } from './sim-process.js';
import {
  EXECUTORS,
  WORKLOADS,
  type BenchReport,
  type ExecutorName,
  type CellMessage,
  type CellResult,
  type CellSpec,
  type Calibration,
  type TreeShape,
  type WorkloadName,
} from './types.js';
import { SMOKE_CELLS, TASK_VARIANTS, generateTree, planWorkloads, taskFor } from './workloads.js';

export interface BenchOptions {
  /** Tiny fan-outs and short latencies: a few minutes (each peer cell waits out a 10 s spin). Default false. */
  quick?: boolean;
  /** Run one workload only. */
  only?: WorkloadName;
  /** Only these executors (default: each workload's list). */
  executors?: readonly ExecutorName[];
  /** The smoke bench: quick sizes, one cell per executor ({@link SMOKE_CELLS}). Default false. */
  smoke?: boolean;
  /** Replace every selected workload's fan-outs (experiments). */
  fanouts?: readonly number[];
  /**
   * Output folder. Default `bench/results` under the working directory for a full run, and
   * `bench/results/quick` (git-ignored) for a quick one, so a quick run leaves git clean.
   */
  outDir?: string;
  /** Base name of the output files. Default `quick` or `full`. */
  name?: string;
  /** Write a V8 CPU profile of each cell's process into `<out>/profiles`. Default false. */
  cpuProf?: boolean;
  /** Progress lines. Default: stderr. */
  log?: (line: string) => void;
}

export interface BenchOutcome {
  report: BenchReport;
  /** Absolute paths of everything written. */
  files: string[];
  /** The results table and the targets, as markdown. */
  table: string;
}

/** Where a full run writes (committed) and where a quick run writes (git-ignored). */
export const FULL_OUT_DIR = path.join('bench', 'results');
export const QUICK_OUT_DIR = path.join('bench', 'results', 'quick');

/** Extra time a cell's process gets beyond its own bound (start, probes, close). */
const CELL_SLACK_MS = 60_000;

/** Cell processes alive now, killed synchronously if the bench exits early. */
const children = new Set<ChildProcess>();
let hooked = false;

function runCellProcess(spec: CellSpec, profileDir: string | undefined): Promise<CellResult> {
  if (!hooked) {
    hooked = true;
    process.once('exit', () => children.forEach((c) => c.kill('SIGKILL')));
  }
  return new Promise((resolve, reject) => {
    const child = fork(builtBenchFile('cell-child'), [], {
      // A folder per cell and Node's own file names (pid and thread id in each): the worker
      // threads inherit --cpu-prof, and one fixed name let the last thread to exit overwrite the rest.
      execArgv: profileDir ? ['--cpu-prof', '--cpu-prof-dir', path.join(profileDir, `${spec.workload}-${spec.jobs}-${spec.executor}`)] : [],
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
      serialization: 'advanced',
    });
    children.add(child);
    let answer: CellMessage | undefined;
    const timer = setTimeout(() => child.kill('SIGKILL'), spec.timeoutMs + CELL_SLACK_MS);
    child.on('message', (message: CellMessage) => (answer = message));
    child.once('error', (error) => (answer ??= { type: 'error', message: error.message }));
    child.once('exit', (code, signal) => {
      clearTimeout(timer);
      children.delete(child);
      if (answer?.type === 'result') resolve(answer.result);
      else reject(new Error(answer?.type === 'error' ? answer.message : `cell process ended without a result (code ${code}, signal ${signal})`));
    });
    child.send(spec);
  });
}

function summary(c: CellResult): string {
  const s = (ms: number) => (ms / 1000).toFixed(2);
  return `${c.workload} ${c.jobs} ${c.executor}: ${s(c.wallMs)} s, ${c.jobsPerSec.toFixed(1)} jobs/s, loop p99 ${c.eldP99Ms.toFixed(2)} ms, CPU ${c.cpuMsPerJob.toFixed(1)} ms/job, RSS ${Math.round(c.peakRssMb)} MB, ${c.ok}/${c.jobs} ok`;
}

/** Why a cell that ran counts as failed (not every job delivered and `ok`), or undefined. */
export function cellFailure(c: CellResult): string | undefined {
  if (c.ok === c.jobs && c.delivered === c.jobs) return undefined;
  return `${c.ok} of ${c.jobs} jobs ended ok (${c.delivered} delivered)${c.notes.length > 0 ? `: ${c.notes.join('; ')}` : ''}`;
}

export async function runBench(options: BenchOptions = {}): Promise<BenchOutcome> {
  const quick = (options.quick ?? false) || (options.smoke ?? false);
  const name = options.name ?? (quick ? 'quick' : 'full');
  const outDir = path.resolve(options.outDir ?? (quick ? QUICK_OUT_DIR : FULL_OUT_DIR));
  const log = options.log ?? ((line: string) => process.stderr.write(`[bench] ${line}\n`));
  if (options.only !== undefined && !WORKLOADS.includes(options.only))
    throw new Error(`--only expects one of ${WORKLOADS.join(', ')}; received ${String(options.only)}`);
  const plans = planWorkloads(quick).filter((w) => options.only === undefined || w.name === options.only);
  mkdirSync(outDir, { recursive: true });
  const profileDir = options.cpuProf ? path.join(outDir, 'profiles') : undefined;
  if (profileDir) mkdirSync(profileDir, { recursive: true });

  const cpus = os.cpus();
  const report: BenchReport = {
    name,
    quick,
    startedAt: new Date().toISOString(),
    machine: {
      cpus: cpus.length,
      cpuModel: cpus[0]?.model.trim() ?? 'unknown',
      memGb: Math.round(os.totalmem() / 2 ** 30),
      node: process.version,
      platform: `${process.platform} ${os.release()}`,
      ...openFilesLimit(),
    },
    workloads: {},
    cells: [],
    errors: [],
    skipped: [],
  };
  const tmp = realpathSync(mkdtempSync(path.join(os.tmpdir(), 'forkpool-bench-')));
  // The generated trees go on every way out, a signal's process.exit() included.
  const removeTmp = () => rmSync(tmp, { recursive: true, force: true });
  process.once('exit', removeTmp);
  try {
    const trees = new Map<string, string>();
    const treeFor = (shape: TreeShape) => {
      const key = `${shape.files}x${shape.bytesPerFile}`;
      let dir = trees.get(key);
      if (!dir) {
        dir = path.join(tmp, `tree-${key}`);
        const bytes = generateTree(dir, shape);
        log(`generated ${shape.files} files (${(bytes / 2 ** 20).toFixed(1)} MB) in ${dir}`);
        trees.set(key, dir);
      }
      return dir;
    };
    for (const plan of plans) {
      report.workloads[plan.name] = { description: plan.description, sim: { ...plan.sim } };
      let workspace: string;
      let task: string | undefined;
      if (plan.generate) {
        workspace = path.join(tmp, `workspace-${plan.name}`);
        const generated = plan.generate(workspace);
        task = generated.task;
        log(`${plan.name}: ${generated.summary} in ${workspace}`);
      } else workspace = treeFor(plan.tree);
      const sim = await startSimProcess(plan.sim);
      log(`${plan.name}: simulator pid ${sim.pid} at ${sim.url} (latency ${plan.sim.latencyMs} ms + jitter < ${plan.sim.jitterMs} ms)`);
      try {
        // The ideal schedule's inputs: one job's model calls and its tools' CPU, single-threaded.
        let calibration: Calibration | undefined;
        try {
          calibration = await calibrate({ simUrl: sim.url, workspace, task: task ?? taskFor(0), sim: plan.sim });
          (report.calibration ??= {})[plan.name] = calibration;
          log(
            `${plan.name}: one job = ${calibration.modelCalls} model calls, tool CPU ${calibration.toolCpuMs.toFixed(1)} ms (single-threaded; ${calibration.cores} cores)`,
          );
        } catch (error) {
          log(`${plan.name}: calibration failed, no ideal times: ${error instanceof Error ? error.message : String(error)}`);
        }
        for (const jobs of options.fanouts ?? plan.fanouts) {
          const chosen = (e: ExecutorName) =>
            (options.executors === undefined || options.executors.includes(e)) && (!options.smoke || SMOKE_CELLS[plan.name].includes(e));
          for (const executor of plan.executors.filter(chosen)) {
            const skip = plan.skip?.find((s) => s.executor === executor && s.jobs === jobs);
            if (skip) {
              report.skipped.push({ workload: plan.name, executor, jobs, reason: skip.reason });
              log(`${plan.name} ${jobs} ${executor}: skipped (${skip.reason})`);
              continue;
            }
            const concurrency = plan.concurrency(jobs);
            const spec: CellSpec = {
              workload: plan.name,
              executor,
              jobs,
              concurrency,
              tasksPerThread: sharedTasksPerThread(concurrency),
              simUrl: sim.url,
              workspace,
              ...(task !== undefined ? { task } : {}),
              taskVariants: TASK_VARIANTS,
              warmup: true,
              probes: plan.probes,
              hardProbes: plan.hardProbes,
              timeoutMs: plan.timeoutFor?.(jobs) ?? plan.timeoutMs,
            };
            try {
              const cellStarted = Date.now();
              const result = applyIdeal(await runCellProcess(spec, profileDir), calibration);
              report.cells.push(result);
              // A cell whose jobs did not all end `ok` failed, whatever its figures say.
              const failure = cellFailure(result);
              if (failure) report.errors.push({ workload: plan.name, executor, jobs, message: failure });
              log(`${summary(result)} (cell ${((Date.now() - cellStarted) / 1000).toFixed(1)} s)${failure ? ` FAILED: ${failure}` : ''}`);
            } catch (error) {
              const message = error instanceof Error ? error.message : String(error);
              report.errors.push({ workload: plan.name, executor, jobs, message });
              log(`${plan.name} ${jobs} ${executor}: FAILED ${message.split('\n')[0]}`);
            }
          }
        }
      } finally {
        await sim.stop();
      }
    }
  } finally {
    process.off('exit', removeTmp);
    removeTmp();
  }

  const files: string[] = [];
  let charts: string[] = [];
  try {
    charts = await writeCharts(report.cells, outDir, name);
    files.push(...charts.map((f) => path.join(outDir, f)));
  } catch (error) {
    log(`charts skipped: ${error instanceof Error ? error.message : String(error)} (they need the dev dependencies vega and vega-lite)`);
  }
  const jsonFile = path.join(outDir, `${name}.json`);
  await writeFile(jsonFile, `${JSON.stringify(report, null, 2)}\n`);
  const mdFile = path.join(outDir, `${name}.md`);
  await writeFile(mdFile, markdownReport(report, charts));
  files.unshift(jsonFile, mdFile);
  const table = `${markdownTable(report.cells)}\n\n${peersSection(report).join('\n')}\n${targetsTable(checkTargets(report.cells))}`;
  return { report, files, table };
}

/** `--only adaptive`: just the adaptive-concurrency comparison. */
const ADAPTIVE_SECTION = 'adaptive';

/** Flags of `npm run bench` (`node dist-bench/bench/run.js`). */
export interface BenchFlags {
  quick?: boolean;
  only?: string;
  out?: string;
  name?: string;
  /** Comma-separated executor names. */
  executors?: string;
  /** Comma-separated fan-outs. */
  fanouts?: string;
  cpuProf?: boolean;
}

/** Validates the flags, runs, prints the table on stdout. Exit code 0, 1 (a cell failed) or 2 (usage). */
export async function benchCommand(flags: BenchFlags): Promise<number> {
  const usage = (message: string) => {
    process.stderr.write(`bench: ${message}\n`);
    return 2;
  };
  if (flags.only !== undefined && flags.only !== ADAPTIVE_SECTION && !(WORKLOADS as readonly string[]).includes(flags.only))
    return usage(`--only expects one of ${[...WORKLOADS, ADAPTIVE_SECTION].join(', ')}; received ${flags.only}`);
  const executors = flags.executors?.split(',').map((e) => e.trim());
  const unknown = executors?.filter((e) => !(EXECUTORS as readonly string[]).includes(e)) ?? [];
  if (unknown.length > 0) return usage(`--executors expects some of ${EXECUTORS.join(', ')}; received ${unknown.join(', ')}`);
  const fanouts = flags.fanouts?.split(',').map(Number);
  if (fanouts?.some((n) => !Number.isInteger(n) || n < 1 || n > 100_000))
    return usage(`--fanouts expects integers 1..100000, comma-separated; received ${flags.fanouts}`);
  // Ctrl+C / SIGTERM: end the cell and simulator processes too, then go.
  const onSignal = (code: number) => () => {
    children.forEach((c) => c.kill('SIGKILL'));
    process.exit(code);
  };
  process.once('SIGINT', onSignal(130));
  process.once('SIGTERM', onSignal(143));
  // The adaptive-concurrency comparison is its own section (bench/adaptive.ts).
  const adaptive = flags.only === undefined || flags.only === ADAPTIVE_SECTION ? () => runAdaptiveBench({ quick: flags.quick ?? false }) : undefined;
  if (flags.only === ADAPTIVE_SECTION && adaptive) {
    const { results, table } = await adaptive();
    process.stdout.write(`${table}\n`);
    return results.every((r) => r.ok === r.jobs) ? 0 : 1;
  }
  const { report, files, table } = await runBench({
    quick: flags.quick ?? false,
    ...(flags.only ? { only: flags.only as WorkloadName } : {}),
    ...(flags.out ? { outDir: flags.out } : {}),
    ...(flags.name ? { name: flags.name } : {}),
    ...(executors ? { executors: executors as ExecutorName[] } : {}),
    ...(fanouts ? { fanouts } : {}),
    cpuProf: flags.cpuProf ?? false,
  });
  process.stdout.write(`${table}\n\nwrote ${files.map((f) => path.relative(process.cwd(), f)).join(', ')}\n`);
  const section = adaptive ? await adaptive() : undefined;
  if (section) process.stdout.write(`\n${section.table}\n`);
  return report.errors.length > 0 || section?.results.some((r) => r.ok !== r.jobs) ? 1 : 0;
}

const USAGE = `usage: npm run bench -- [flags]   (the benchmark matrix, executors × workloads, against the simulator)
  --quick             tiny fan-outs and short latencies (a few minutes; each SDK cell waits out a 10 s spin)
  --only <workload>   one of ${[...WORKLOADS, ADAPTIVE_SECTION].join(', ')}
  --executors <list>  comma-separated, some of ${EXECUTORS.join(', ')}
  --fanouts <list>    comma-separated job counts, replacing each workload's own
  --out <dir>         output folder (default ${FULL_OUT_DIR}; quick runs ${QUICK_OUT_DIR}, git-ignored)
  --name <name>       base name of the output files (default: quick or full)
  --cpu-prof          a CPU profile of each cell in <out>/profiles
`;

/** `node dist-bench/bench/run.js [flags]` (what `npm run bench` runs); `--help` prints the flags. */
export async function benchMain(argv: readonly string[]): Promise<number> {
  if (argv.includes('--help') || argv.includes('-h')) {
    process.stdout.write(USAGE);
    return 0;
  }
  try {
    const { values } = parseArgs({
      args: [...argv],
      options: {
        quick: { type: 'boolean' },
        only: { type: 'string' },
        out: { type: 'string' },
        name: { type: 'string' },
        executors: { type: 'string' },
        fanouts: { type: 'string' },
        'cpu-prof': { type: 'boolean' },
      },
      strict: true,
      allowPositionals: false,
    });
    const { 'cpu-prof': cpuProf, ...rest } = values;
    return await benchCommand({ ...rest, ...(cpuProf !== undefined ? { cpuProf } : {}) });
  } catch (error) {
    process.stderr.write(`bench: ${error instanceof Error ? error.message : String(error)}\n${USAGE}`);
    return error instanceof TypeError ? 2 : 1;
  }
}

if (isEntry(import.meta.url)) process.exitCode = await benchMain(process.argv.slice(2));

/**
 * The soft open-file limit (Linux: /proc/self/limits). Every job in flight holds a socket, and a
 * tool a file: at 10,000 jobs in flight this limit, not memory, is what runs out first.
 */
function openFilesLimit(): { openFilesLimit?: number } {
  try {
    const line = readFileSync('/proc/self/limits', 'utf8')
      .split('\n')
      .find((l) => l.startsWith('Max open files'));
    const soft = Number(line?.split(/\s{2,}/)[1]);
    return Number.isFinite(soft) ? { openFilesLimit: soft } : {};
  } catch {
    return {};
  }
}
