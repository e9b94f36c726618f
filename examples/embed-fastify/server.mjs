// @ts-check
/**
 * A small Fastify app that embeds forkpool as a user would: imports the package, configures
 * it in code (no config file, no environment), and exposes two routes of its own.
 *
 *   npm install forkpool fastify
 *   MODEL_BASE_URL=http://127.0.0.1:8000/v1 node server.mjs      # any OpenAI-compatible server
 *   node server.mjs --sim                                         # forkpool's simulated model
 *
 * POST /research {"question": "..."} starts a background job and answers with its id;
 * GET /research/:id waits up to 30 s for its answer. GET /health is never blocked by a job:
 * jobs run in worker threads with their own heap cap and a hard timeout.
 */
import Fastify from 'fastify';
import { BackgroundManager, ConfigError, loadConfig } from 'forkpool';
import { startSimServer } from 'forkpool/sim';

const useSim = process.argv.includes('--sim');
const sim = useSim ? await startSimServer({ latencyMs: 20 }) : undefined;

/** @type {import('forkpool').ForkpoolConfig} */
let config;
try {
  config = loadConfig({
    config: {
      ...(sim ? { baseUrl: sim.url } : process.env.MODEL_BASE_URL ? { baseUrl: process.env.MODEL_BASE_URL } : {}),
      ...(process.env.MODEL_API_KEY ? { apiKey: process.env.MODEL_API_KEY } : {}),
      workspaceRoot: process.env.WORKSPACE ?? process.cwd(),
      executor: 'piscina',
      background: { maxConcurrent: 4, heapMb: 256, timeoutMs: 120_000, closeTimeoutMs: 5_000, queueLimit: 100 },
    },
  });
} catch (error) {
  // A missing model endpoint lands here too: the message names baseUrl and apiKey.
  if (error instanceof ConfigError) {
    console.error(error.message);
    process.exit(2);
  }
  throw error;
}

const manager = new BackgroundManager({ config });
const app = Fastify();

app.get('/health', async () => ({ ok: true, running: manager.count('running'), queued: manager.count('queued') }));

app.post('/research', async (request, reply) => {
  const body = /** @type {{ question?: unknown }} */ (request.body ?? {});
  if (typeof body.question !== 'string' || body.question.trim() === '') {
    return reply.code(400).send({ error: 'body.question: expected a non-empty string' });
  }
  const job = manager.spawn({ task: body.question, label: body.question.slice(0, 40) });
  return reply.code(202).send({ id: job.id });
});

app.get('/research/:id', async (request, reply) => {
  const { id } = /** @type {{ id: string }} */ (request.params);
  if (!manager.get(id)) return reply.code(404).send({ error: `no job ${id}` });
  const timeout = new Promise((resolve) => setTimeout(resolve, 30_000, undefined));
  const record = /** @type {import('forkpool').JobRecord | undefined} */ (await Promise.race([manager.result(id), timeout]));
  if (!record) return reply.code(202).send({ id, state: manager.get(id)?.state });
  return {
    id,
    status: record.status,
    answer: record.resultText ?? null,
    error: record.error ? { code: record.error.code, message: record.error.message } : null,
  };
});

const port = Number(process.env.PORT ?? 3000);
await app.listen({ host: '127.0.0.1', port });
const address = app.server.address();
console.log(JSON.stringify({ listening: `http://127.0.0.1:${typeof address === 'object' && address ? address.port : port}` }));

for (const signal of /** @type {const} */ (['SIGINT', 'SIGTERM'])) {
  process.once(signal, async () => {
    await app.close();
    const report = await manager.close(); // cancels what runs, bounded by closeTimeoutMs
    await sim?.close();
    console.log(JSON.stringify({ closed: signal, cancelled: report.cancelled.length, stragglers: report.stragglers.length }));
    process.exit(0);
  });
}
