/**
 * The bench's simulator process: `node dist-bench/bench/sim-child.js '<json options>'`. Like
 * `forkpool sim`, it prints one `{"type":"listening","url":…}` line on stdout; it also takes
 * the options the CLI has no flags for (`researchSteps`). Always on 127.0.0.1, bodies not kept.
 * It exits on SIGTERM/SIGINT, or when its stdin closes (the bench process is gone).
 */
import { startSimServer, type SimServerOptions } from 'forkpool/sim';

const raw = process.argv[2] ?? '{}';
const options = JSON.parse(raw) as Pick<SimServerOptions, 'latencyMs' | 'jitterMs' | 'seed' | 'researchSteps' | 'capacity' | 'capacityRetryAfterSeconds'>;
const sim = await startSimServer({ ...options, host: '127.0.0.1', port: 0, recordBodies: false });
// Bodies are not kept, but each request still leaves a small record: drop them now and then.
const trim = setInterval(() => sim.requests.splice(0, sim.requests.length), 5_000);
process.stdout.write(`${JSON.stringify({ type: 'listening', url: sim.url, port: sim.port })}\n`);

await new Promise<void>((resolve) => {
  process.once('SIGINT', resolve);
  process.once('SIGTERM', resolve);
  process.stdin.once('end', resolve);
  process.stdin.once('close', resolve);
  process.stdin.resume();
});
clearInterval(trim);
await sim.close();
process.exit(0);
