/**
 * The bench's workloads and the generated workspaces their jobs search. Everything here is
 * deterministic: the same plan and the same files on every run.
 */
import { mulberry32 } from '#dist/sim/rng.js';
import { parsePlan } from './parse-workload.js';
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { CellSpec, ExecutorName, TreeShape, WorkloadName, WorkloadPlan } from './types.js';
import { EXECUTORS, PEER_EXECUTORS } from './types.js';

/** Keyword variants in the tree; job i asks about variant i % TASK_VARIANTS. */
export const TASK_VARIANTS = 8;

/**
 * A job's task. The simulated model greps for the task's two keywords (`zorblaxK` and
 * `quasarmodule`), which appear in a few files only, so its grep reads the whole tree.
 */
export function taskFor(i: number, variants = TASK_VARIANTS): string {
  return `Where is zorblax${i % variants} wired into the quasarmodule?`;
}

/**
 * The smoke bench (`runBench({ smoke: true })`, the test suite's): one quick cell per executor,
 * each executor in one workload, every workload with at least one (so each is calibrated and
 * charted). The peers run io, beside inline, as their comparison rows need.
 */
export const SMOKE_CELLS: Readonly<Record<WorkloadName, readonly ExecutorName[]>> = {
  io: ['inline', ...PEER_EXECUTORS],
  cpu: ['piscina-thread', 'worker-per-job'],
  scale: ['piscina-shared'],
  parse: ['tinypool'],
};

export function planWorkloads(quick: boolean): WorkloadPlan[] {
  const ioTree: TreeShape = { files: 40, bytesPerFile: 2_000 };
  const io: WorkloadPlan = {
    name: 'io',
    description:
      'I/O-bound: five model calls per job (search, read, two directory listings, answer) over a 40-file tree; ' +
      (quick ? 'model latency 20-30 ms' : 'model latency 180-220 ms (200 ms ± 20 ms jitter)'),
    sim: quick ? { latencyMs: 20, jitterMs: 10, researchSteps: 5, seed: 1 } : { latencyMs: 180, jitterMs: 40, researchSteps: 5, seed: 1 },
    executors: EXECUTORS,
    fanouts: quick ? [12] : [10, 100, 1000],
    concurrency: () => (quick ? 8 : 50),
    tree: ioTree,
    probes: quick ? 3 : 10,
    hardProbes: quick ? 2 : 5,
    timeoutMs: quick ? 30_000 : 240_000,
    skip: quick
      ? []
      : [
          {
            executor: 'worker-per-job',
            jobs: 1000,
            reason: 'a fresh thread per job costs ~0.4 s of CPU on this machine (see the 100-job cell): ~7 minutes, over the bench budget',
          },
        ],
  };
  const cpu: WorkloadPlan = {
    name: 'cpu',
    description: quick
      ? 'CPU-heavy tools: each job greps a 300-file tree (~2.4 MB) and reads the best hit; model latency 2 ms'
      : 'CPU-heavy tools: each job greps a 4,000-file tree (~40 MB) and reads the best hit; model latency 5 ms',
    sim: { latencyMs: quick ? 2 : 5, jitterMs: 0, researchSteps: 3, seed: 2 },
    executors: EXECUTORS,
    fanouts: quick ? [4] : [24],
    concurrency: () => (quick ? 2 : 8),
    tree: quick ? { files: 300, bytesPerFile: 8_000 } : { files: 4_000, bytesPerFile: 10_000 },
    probes: quick ? 3 : 10,
    hardProbes: quick ? 2 : 5,
    timeoutMs: quick ? 30_000 : 240_000,
  };
  const scale: WorkloadPlan = {
    name: 'scale',
    description: `Scale: every job in flight at once (cap = fan-out), three model calls per job at ${quick ? '100 ms' : '1 s'} latency, over an 8-file tree (the tools stay cheap: this measures holding jobs, not tool work)`,
    sim: { latencyMs: quick ? 100 : 1_000, jitterMs: 0, researchSteps: 3, seed: 3 },
    executors: ['inline', 'piscina-shared', ...PEER_EXECUTORS],
    fanouts: quick ? [100] : [1_000, 5_000, 10_000],
    concurrency: (jobs) => jobs,
    tree: { files: 8, bytesPerFile: 1_000 },
    probes: quick ? 3 : 5,
    hardProbes: quick ? 2 : 3,
    timeoutMs: quick ? 30_000 : 300_000,
    // 40 ms a job past 7,500 jobs: twice what the 10,000-job cell took per job (Dec 3 run).
    timeoutFor: (jobs) => (quick ? 30_000 : Math.max(300_000, jobs * 40)),
  };
  return [io, cpu, scale, parsePlan(quick)];
}

// Filler words: none contains a task keyword, so only the planted lines match the grep.
const WORDS = (
  'const let return value index buffer stream record table column parse format render state ' +
  'event queue worker thread config option default limit error result status report cache ' +
  'request response client server header payload token session account order invoice price ' +
  'amount total count offset length width height color style layout module import export ' +
  'function class method field array object string number boolean promise async await yield'
).split(' ');

/**
 * Writes a deterministic tree into `dir`: source-like files of random words, plus, for each of
 * `variants` keywords, three files holding a line that names it (and one file named after it).
 * Returns the bytes written.
 */
export function generateTree(dir: string, shape: TreeShape, variants = TASK_VARIANTS): number {
  const random = mulberry32(0xf0c4 + shape.files);
  const planted = new Map<number, number[]>();
  for (let k = 0; k < variants; k++) {
    for (let j = 0; j < 3; j++) {
      const at = (k * 7_919 + j * 104_729 + 17) % shape.files;
      planted.set(at, [...(planted.get(at) ?? []), k]);
    }
  }
  let bytes = 0;
  for (let i = 0; i < shape.files; i++) {
    const folder = path.join(dir, `pkg-${String(Math.floor(i / 40)).padStart(3, '0')}`);
    if (i % 40 === 0) mkdirSync(folder, { recursive: true });
    const lines: string[] = [];
    let size = 0;
    const marks = planted.get(i) ?? [];
    while (size < shape.bytesPerFile) {
      if (marks.length > 0 && lines.length === 20) {
        for (const k of marks) lines.push(`export const zorblax${k} = quasarmodule.register('zorblax${k}');`);
      }
      const words: string[] = [];
      for (let w = 0, n = 6 + Math.floor(random() * 8); w < n; w++) words.push(WORDS[Math.floor(random() * WORDS.length)] ?? 'value');
      const line = `  ${words.join(' ')};`;
      lines.push(line);
      size += line.length + 1;
    }
    const text = `${lines.join('\n')}\n`;
    writeFileSync(path.join(folder, `mod-${String(i).padStart(5, '0')}.ts`), text);
    bytes += text.length;
    for (const k of marks) {
      if ((planted.get(i)?.[0] ?? -1) !== k) continue;
      const named = `// zorblax${k}: how it is wired into the quasarmodule\nexport const zorblax${k}Wiring = { module: 'quasarmodule', key: 'zorblax${k}' };\n`;
      writeFileSync(path.join(folder, `zorblax${k}-wiring.ts`), named);
      bytes += named.length;
    }
  }
  return bytes;
}

/** Job i's task: the workload's own (parse), else a keyword variant. */
export function taskOf(spec: CellSpec, i: number): string {
  return spec.task ?? taskFor(i, spec.taskVariants);
}
