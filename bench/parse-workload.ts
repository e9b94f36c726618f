/**
 * The `parse` workload: a tool that really blocks. Each job asks the simulated model to outline
 * the 50 largest source files of a generated 2,000-file TypeScript tree; the model calls
 * `code_outline` on each (one message, 50 calls), and every call is a synchronous parse of
 * tens of kilobytes. In-process executors run those parses on the main thread; forkpool's
 * threads run them off it. Everything here is deterministic: the same files on every run.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { mulberry32 } from '#dist/sim/rng.js';
import { EXECUTORS, type CellResult, type TargetCheck, type WorkloadPlan } from './types.js';

export interface SourceTreeShape {
  files: number;
  /** Files the task names: the largest ones. */
  outlined: number;
  /** Size of the smallest file; sizes follow a heavy tail above it (a few large modules, many small ones). */
  minBytes: number;
  maxBytes: number;
}

export interface SourceTree {
  /** Workspace-relative paths of the `outlined` largest files, largest first. */
  largest: string[];
  bytes: number;
  largestBytes: number;
}

const NOUNS = [
  'job',
  'pool',
  'queue',
  'worker',
  'record',
  'ledger',
  'session',
  'event',
  'client',
  'request',
  'result',
  'budget',
  'model',
  'tool',
  'thread',
  'port',
  'cache',
  'config',
  'report',
  'stream',
];
const VERBS = [
  'spawn',
  'cancel',
  'flush',
  'resolve',
  'collect',
  'render',
  'parse',
  'merge',
  'retry',
  'schedule',
  'drain',
  'settle',
  'measure',
  'encode',
  'validate',
  'restore',
];
const TYPES = ['string', 'number', 'boolean', 'readonly string[]', 'Map<string, number>', 'Promise<void>', 'Record<string, unknown>', 'Date | undefined'];

/**
 * The plan: 2,000 files (quick: 200), each job outlines the 50 largest (quick: 6). Model
 * latency 5 ms: the parses are the work. Cap 4 (quick 2): the CPU is the limit on two cores.
 */
export function parsePlan(quick: boolean): WorkloadPlan {
  const shape: SourceTreeShape = quick
    ? { files: 200, outlined: 6, minBytes: 1_000, maxBytes: 30_000 }
    : { files: 2_000, outlined: 50, minBytes: 1_000, maxBytes: 120_000 };
  return {
    name: 'parse',
    description:
      `A tool that blocks: each job outlines the ${shape.outlined} largest files of a generated ${shape.files.toLocaleString('en-US')}-file TypeScript tree ` +
      `with code_outline (one synchronous @babel/parser parse per file, ${shape.outlined} calls in one model message); model latency ${quick ? 2 : 5} ms`,
    sim: { latencyMs: quick ? 2 : 5, jitterMs: 0, researchSteps: 3, seed: 4 },
    executors: EXECUTORS,
    fanouts: quick ? [2] : [16],
    concurrency: () => (quick ? 2 : 4),
    tree: { files: shape.files, bytesPerFile: 0 }, // not used: `generate` writes the tree
    generate: (dir) => {
      const tree = generateSourceTree(dir, shape);
      return {
        task: parseTask(tree.largest),
        summary: `generated ${shape.files} TypeScript files (${(tree.bytes / 2 ** 20).toFixed(1)} MB; the ${shape.outlined} largest: ${(tree.largestBytes / 2 ** 20).toFixed(2)} MB)`,
      };
    },
    probes: quick ? 2 : 5,
    hardProbes: quick ? 2 : 3,
    timeoutMs: quick ? 60_000 : 300_000,
  };
}

/** The task of every parse job: outline these files (the sim's agent calls code_outline on each). */
export function parseTask(files: readonly string[]): string {
  return `Outline the ${files.length} largest source files, so I know where each class and function lives: ${files.join(', ')}.`;
}

/**
 * Writes `shape.files` TypeScript modules (interfaces, enums, classes with methods, functions,
 * arrow constants, realistic statement bodies) into `dir`, in folders of 40, and returns the
 * largest `shape.outlined` of them.
 */
export function generateSourceTree(dir: string, shape: SourceTreeShape): SourceTree {
  const random = mulberry32(0x0a7e + shape.files);
  const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)] as T;
  // A running number keeps every declared name unique (a redeclaration would not parse).
  let serial = 0;
  const name = (upper: boolean) => {
    const text = `${pick(VERBS)}${cap(pick(NOUNS))}${serial++}`;
    return upper ? cap(text) : text;
  };
  const sizes: Array<{ rel: string; bytes: number }> = [];
  let total = 0;
  for (let i = 0; i < shape.files; i++) {
    const folder = `src/mod-${String(Math.floor(i / 40)).padStart(3, '0')}`;
    if (i % 40 === 0) mkdirSync(path.join(dir, folder), { recursive: true });
    // A Pareto-like tail: most files a few KB, the largest 2-3% tens to hundreds of KB.
    const target = Math.min(shape.maxBytes, Math.round(shape.minBytes * (1 - random()) ** -0.8));
    const parts: string[] = [
      `// Generated module ${i}: ${pick(NOUNS)} handling.`,
      `import { ${name(false)} } from '../mod-${String(Math.floor(random() * 50)).padStart(3, '0')}/index.js';`,
      '',
    ];
    let size = parts.join('\n').length;
    while (size < target) {
      const block = declaration(random, pick, name);
      parts.push(block, '');
      size += block.length + 1;
    }
    const text = parts.join('\n');
    const rel = `${folder}/${name(false)}-${i}.ts`;
    writeFileSync(path.join(dir, rel), text);
    sizes.push({ rel, bytes: text.length });
    total += text.length;
  }
  sizes.sort((a, b) => b.bytes - a.bytes || (a.rel < b.rel ? -1 : 1));
  const largest = sizes.slice(0, shape.outlined);
  return { largest: largest.map((s) => s.rel), bytes: total, largestBytes: largest.reduce((sum, s) => sum + s.bytes, 0) };
}

function cap(text: string): string {
  return text.charAt(0).toUpperCase() + text.slice(1);
}

type Pick = <T>(items: readonly T[]) => T;

/** One top-level declaration: a class (most of the bytes), an interface, an enum, a function or an arrow constant. */
function declaration(random: () => number, pick: Pick, name: (upper: boolean) => string): string {
  const r = random();
  if (r < 0.45) {
    const members: string[] = [];
    const fields = 1 + Math.floor(random() * 4);
    for (let f = 0; f < fields; f++) members.push(`  private ${name(false)}: ${pick(TYPES)} = ${literalFor(random)};`);
    members.push(`  constructor(private readonly options: ${name(true)}Options) {}`);
    for (let m = 0, n = 2 + Math.floor(random() * 8); m < n; m++) members.push('', method(random, pick, name));
    return `${random() < 0.7 ? 'export ' : ''}class ${name(true)} {\n${members.join('\n')}\n}`;
  }
  if (r < 0.6) {
    const fields = Array.from({ length: 2 + Math.floor(random() * 6) }, () => `  ${name(false)}${random() < 0.3 ? '?' : ''}: ${pick(TYPES)};`);
    return `export interface ${name(true)}Options {\n${fields.join('\n')}\n}`;
  }
  if (r < 0.67) {
    const cases = Array.from({ length: 2 + Math.floor(random() * 5) }, () => `  ${name(true)},`);
    return `export enum ${name(true)}State {\n${cases.join('\n')}\n}`;
  }
  if (r < 0.87) return method(random, pick, name, random() < 0.6 ? 'export async function ' : 'async function ');
  return `export const ${name(false)} = (${name(false)}: ${pick(TYPES)}, limit = ${Math.floor(random() * 1000)}): number => {\n  const total = [${Array.from({ length: 4 }, () => Math.floor(random() * 99)).join(', ')}].reduce((a, b) => a + b, 0);\n  return Math.min(limit, total);\n};`;
}

function literalFor(random: () => number): string {
  const r = random();
  if (r < 0.3) return `'${Math.floor(random() * 1e6).toString(36)}'`;
  if (r < 0.6) return String(Math.floor(random() * 10_000));
  if (r < 0.8) return 'new Map()';
  return '[]';
}

/** A method with a realistic body: locals, a loop, a branch, a template string, an await. */
function method(random: () => number, pick: Pick, name: (upper: boolean) => string, asFunction?: string): string {
  const params = Array.from({ length: Math.floor(random() * 4) }, () => `${name(false)}: ${pick(TYPES)}`);
  const lines: string[] = [];
  for (let s = 0, n = 3 + Math.floor(random() * 12); s < n; s++) {
    const v = name(false);
    const k = random();
    if (k < 0.3) lines.push(`const ${v} = this.${name(false)}?.get(${JSON.stringify(pick(NOUNS))}) ?? ${Math.floor(random() * 100)};`);
    else if (k < 0.5)
      lines.push(
        `for (const ${v} of [${params.map((p) => p.split(':')[0]).join(', ')}]) {`,
        `  if (${v} === undefined) continue;`,
        `  this.${name(false)}.set(String(${v}), Date.now());`,
        '}',
      );
    else if (k < 0.7)
      lines.push(
        `if (this.options.${name(false)} > ${Math.floor(random() * 500)}) {`,
        `  throw new Error(\`${pick(NOUNS)} \${${JSON.stringify(pick(VERBS))}} failed after \${${Math.floor(random() * 9)}} attempts\`);`,
        '}',
      );
    else if (k < 0.85) lines.push(`const ${v} = await Promise.all([${pick(NOUNS)}s.map((item) => item.${pick(VERBS)}())].flat());`);
    else lines.push(`// ${pick(VERBS)} the ${pick(NOUNS)} before the ${pick(NOUNS)} is ${pick(VERBS)}d.`);
  }
  lines.push(
    `return ${random() < 0.5 ? 'undefined' : `{ ${pick(NOUNS)}: ${Math.floor(random() * 50)} }`} as unknown as ${pick(['void', 'number', 'string'])};`,
  );
  // A method is indented in its class; a function is not.
  const indent = asFunction === undefined ? '  ' : '';
  const body = lines.map((l) => `${indent}  ${l}`).join('\n');
  return `${indent}${asFunction ?? 'async '}${name(false)}(${params.join(', ')}): Promise<unknown> {\n${body}\n${indent}}`;
}

/**
 * The parse workload's target: a threaded executor keeps the main thread's loop delay p99 at or
 * under 5 ms, and at least 20× under every in-process row (no threads: inline and the peers).
 */
export function parseTargets(cells: readonly CellResult[]): TargetCheck[] {
  const parse = cells.filter((c) => c.workload === 'parse');
  const out: TargetCheck[] = [];
  for (const c of parse.filter((x) => x.threadsMax > 0)) {
    const inProcess = parse.filter((x) => x.threadsMax === 0 && x.jobs === c.jobs);
    const ratios = inProcess.map((x) => ({ name: x.executor, times: x.eldP99Ms / Math.max(c.eldP99Ms, 0.001) }));
    const shown = ratios.map((r) => `${r.name} ${r.times.toFixed(r.times >= 100 ? 0 : 1)}×`).join(', ');
    out.push({
      target: 'parse: loop delay p99 ≤ 5 ms and ≥ 20× under every in-process row',
      executor: c.executor,
      value: `${c.eldP99Ms.toFixed(2)} ms${shown ? ` (in-process ÷ this: ${shown})` : ''}`,
      met: inProcess.length === 0 ? null : c.eldP99Ms <= 5 && ratios.every((r) => r.times >= 20),
    });
  }
  return out;
}
