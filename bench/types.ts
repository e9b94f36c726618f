/**
 * Shapes shared by the bench's parent process (run.ts) and its per-cell child (cell-child.ts).
 * Plain data only: a cell spec goes to the child, a cell result comes back, over IPC.
 */

/** Where jobs run. `inline` is the in-process baseline every ratio is taken against. */
export const OUR_EXECUTORS = ['inline', 'piscina-thread', 'piscina-shared', 'tinypool', 'worker-per-job'] as const;
/** Other SDKs' ways of running sub-agents, in-process, over the same tools and model (bench/peers). */
export const PEER_EXECUTORS = ['openai-agents', 'ai-sdk'] as const;
export const EXECUTORS = [...OUR_EXECUTORS, ...PEER_EXECUTORS] as const;
export type ExecutorName = (typeof EXECUTORS)[number];
export type PeerExecutorName = (typeof PEER_EXECUTORS)[number];
export const isPeerExecutor = (name: ExecutorName): name is PeerExecutorName => (PEER_EXECUTORS as readonly string[]).includes(name);

export const WORKLOADS = ['io', 'cpu', 'scale', 'parse'] as const;
export type WorkloadName = (typeof WORKLOADS)[number];

/** One cell of the matrix: one workload at one fan-out on one executor, run in its own process. */
export interface CellSpec {
  workload: WorkloadName;
  executor: ExecutorName;
  /** Jobs spawned in the timed fan-out. */
  jobs: number;
  /** The manager's cap (`background.maxConcurrent`), the same for every executor of a workload. */
  concurrency: number;
  /** `background.tasksPerThread` (shared isolation). */
  tasksPerThread: number;
  /** The simulator's base URL (another process, loopback). */
  simUrl: string;
  /** Workspace root the jobs' tools search. */
  workspace: string;
  /** The task of every job, when the workload has one (parse); else see `taskVariants`. */
  task?: string;
  /** Task texts cycle through this many keyword variants (see workloads.ts `taskFor`). */
  taskVariants: number;
  /** Run `min(concurrency, jobs, 100)` of the workload's jobs first, untimed, so pools and code start warm. */
  warmup: boolean;
  /** Warm-start + cooperative-cancel samples taken after the fan-out. */
  probes: number;
  /** Hard-stop samples (a job that ignores the cooperative cancel); none for `inline`. */
  hardProbes: number;
  /** The whole cell is abandoned after this long. */
  timeoutMs: number;
}

/**
 * Every figure of a cell. Times in milliseconds, memory in MiB. A `null` means the figure does
 * not exist for this executor (inline has no hard stop) or no sample could be taken.
 */
export interface CellResult {
  workload: WorkloadName;
  executor: ExecutorName;
  jobs: number;
  concurrency: number;
  /** Jobs whose `done` event arrived, and of those the ones that ended `ok`. */
  delivered: number;
  ok: number;
  /** Tool calls of the fan-out's jobs that failed (timed out, errored): the model saw an error. */
  toolErrors: number;
  wallMs: number;
  jobsPerSec: number;
  /** spawn() → `done`, queue time included. */
  latencyP50Ms: number;
  latencyP95Ms: number;
  latencyP99Ms: number;
  /** How late a 1 ms timer fired on the main thread (monitorEventLoopDelay minus its resolution). */
  eldP50Ms: number;
  eldP99Ms: number;
  eldMaxMs: number;
  /** Round trip of a small HTTP GET the main thread makes every 50 ms during the fan-out. */
  respP50Ms: number;
  respP99Ms: number;
  respSamples: number;
  /** Time of the synchronous `manager.spawn()` call, over the fan-out's spawns. */
  spawnP50Ms: number;
  spawnP99Ms: number;
  /** spawn() → the job's first `model_request` on an idle, warmed pool. */
  warmStartP50Ms: number | null;
  /** cancel() on a job waiting for its model → its `done` (ended cooperatively). */
  cancelCoopP50Ms: number | null;
  /** cancel() on a job stuck in synchronous code, grace 0 → its `done` (thread stopped). */
  cancelHardP50Ms: number | null;
  /**
   * The job stuck in synchronous code was still running 10 s after its cancel (an in-process
   * peer cannot stop it): shown as "not stopped after 10 s". False where it was stopped or not probed.
   */
  cancelHardUnstopped: boolean;
  /** The best possible wall time of this cell (bench/ideal.ts); null when it could not be computed. */
  idealMs: number | null;
  /** `idealMs / wallMs`: 1 is the limit. */
  efficiency: number | null;
  /** Model requests per job of the fan-out, where the executor counts them (the peers). */
  modelCallsPerJob?: number;
  /** Most jobs of the fan-out running at once (the peers: started and past the cap's limiter). */
  jobsInFlightMax?: number;
  /** Peak resident set of the cell's process (getrusage maxRSS; worker threads included). */
  peakRssMb: number;
  /** RSS before the executor was created. */
  baseRssMb: number;
  /** Most threads the executor had alive at once (0 for inline). */
  threadsMax: number;
  /** CPU time of the cell's process (every thread) during the fan-out, per job. */
  cpuMsPerJob: number;
  /** Wall time of each phase of the cell (warm-up, fan-out, probes, hard probes, close). */
  phasesMs: Record<string, number>;
  notes: string[];
}

/** Child → parent over IPC. */
export type CellMessage = { type: 'result'; result: CellResult } | { type: 'error'; message: string };

/** What `runBench` writes to `<out>/<name>.json`. */
export interface BenchReport {
  name: string;
  quick: boolean;
  startedAt: string;
  machine: { cpus: number; cpuModel: string; memGb: number; node: string; platform: string; openFilesLimit?: number };
  workloads: Record<string, { description: string; sim: Record<string, number> }>;
  cells: CellResult[];
  /** Cells that failed to produce a result (crashed or timed out), with the reason. */
  errors: Array<{ workload: WorkloadName; executor: ExecutorName; jobs: number; message: string }>;
  /** Cells of the plan left out on purpose, with the reason. */
  skipped: Array<{ workload: WorkloadName; executor: ExecutorName; jobs: number; reason: string }>;
  /** Per workload: one job's model calls and tool CPU, measured once in this run (the ideal's inputs, bench/ideal.ts). */
  calibration?: Record<string, Calibration>;
}

/** One job's measured costs on this machine: the ideal's inputs (ideal.ts). */
export interface Calibration {
  /** Model calls of one job. */
  modelCalls: number;
  /** Mean model latency the simulator adds per call: latency + jitter / 2. */
  modelLatencyMs: number;
  /** Tool calls of one job by step (the model reply that asked for them), CPU and wall time of each alone. */
  steps: Array<Array<{ name: string; cpuMs: number; wallMs: number }>>;
  /** CPU of all of a job's tool calls, one after another. */
  toolCpuMs: number;
  /** Per step the largest call's CPU or the step's CPU spread over the cores, whichever is more, summed: the tools on one job's critical path. */
  chainToolMs: number;
  /** Cores of this machine (`os.availableParallelism()`). */
  cores: number;
}

/** One of the issues' targets, met or missed (`null`: its cells did not run). */
export interface TargetCheck {
  target: string;
  executor: string;
  value: string;
  met: boolean | null;
}

/** A workspace tree: `files` files of about `bytesPerFile` bytes, in folders of 40. */
export interface TreeShape {
  files: number;
  bytesPerFile: number;
}

export interface WorkloadPlan {
  name: WorkloadName;
  description: string;
  /** Options of this workload's simulator process (one process per workload). */
  sim: { latencyMs: number; jitterMs: number; researchSteps: number; seed: number };
  executors: readonly ExecutorName[];
  /** Jobs per cell. */
  fanouts: readonly number[];
  /** The manager's cap for a fan-out: the same for every executor. */
  concurrency: (jobs: number) => number;
  tree: TreeShape;
  probes: number;
  hardProbes: number;
  timeoutMs: number;
  /**
   * A fan-out's own bound on its waits, when it needs more than `timeoutMs` (scale's larger
   * counts: at ~50 jobs/s on 2 cores, 20,000 jobs take ~400 s). Default: `timeoutMs`.
   */
  timeoutFor?: (jobs: number) => number;
  /** Writes the workspace itself (instead of `tree`) and names the task every job gets. */
  generate?: (dir: string) => { task: string; summary: string };
  /** Cells left out on purpose, with the reason (reported, not silently dropped). */
  skip?: ReadonlyArray<{ executor: ExecutorName; jobs: number; reason: string }>;
}
