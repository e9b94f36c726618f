/**
 * Runs the simulated model in a separate process, so the model's own work never lands on the
 * event loop being measured. One process per workload (latency setting).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { builtBenchFile } from './paths.js';

const START_TIMEOUT_MS = 15_000;
const STOP_TIMEOUT_MS = 3_000;

export interface SimProcessOptions {
  latencyMs: number;
  jitterMs: number;
  seed: number;
  researchSteps: number;
  /** Server capacity: requests in flight past it get a 429 (adaptive-concurrency bench). */
  capacity?: number;
  capacityRetryAfterSeconds?: number;
}

export interface SimProcess {
  /** Base URL for the openai client, e.g. `http://127.0.0.1:PORT/v1`. */
  url: string;
  pid: number;
  /** Ends the process: SIGTERM, then SIGKILL after a bound. Idempotent. */
  stop(): Promise<void>;
}

/** Children still running, killed synchronously if this process exits without stopping them. */
const running = new Set<ChildProcess>();
let exitHookInstalled = false;

function installExitHook(): void {
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  process.once('exit', () => {
    for (const child of running) child.kill('SIGKILL');
  });
}

export async function startSimProcess(options: SimProcessOptions): Promise<SimProcess> {
  installExitHook();
  const child = spawn(process.execPath, [builtBenchFile('sim-child'), JSON.stringify(options)], {
    // A plain `node file`: none of the bench's own flags (e.g. --cpu-prof) reach the simulator.
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  running.add(child);
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  void exited.then(() => running.delete(child));

  const stop = async () => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    child.kill('SIGTERM');
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<'late'>((resolve) => (timer = setTimeout(() => resolve('late'), STOP_TIMEOUT_MS)));
    const outcome = await Promise.race([exited.then(() => 'exited' as const), late]);
    clearTimeout(timer);
    if (outcome === 'late') {
      child.kill('SIGKILL');
      await exited;
    }
  };

  try {
    const url = await new Promise<string>((resolve, reject) => {
      let buffered = '';
      const timer = setTimeout(() => reject(new Error(`the simulator process did not report its address within ${START_TIMEOUT_MS} ms`)), START_TIMEOUT_MS);
      child.once('exit', (code, signal) => {
        clearTimeout(timer);
        reject(new Error(`the simulator process exited before listening (code ${code}, signal ${signal})`));
      });
      child.stdout?.on('data', (chunk: Buffer) => {
        buffered += chunk.toString('utf8');
        for (let nl = buffered.indexOf('\n'); nl >= 0; nl = buffered.indexOf('\n')) {
          const line = buffered.slice(0, nl).trim();
          buffered = buffered.slice(nl + 1);
          try {
            const message = JSON.parse(line) as { type?: unknown; url?: unknown };
            if (message.type === 'listening' && typeof message.url === 'string') {
              clearTimeout(timer);
              resolve(message.url);
            }
          } catch {
            // not a JSON line: ignore
          }
        }
      });
    });
    if (!/^http:\/\/127\.0\.0\.1:\d+\/v1$/.test(url)) throw new Error(`the simulator is not on loopback: ${url}`);
    return { url, pid: child.pid ?? -1, stop };
  } catch (error) {
    await stop();
    throw error;
  }
}
