// @ts-check
/**
 * Your own tools in every job: a host tool over an SQLite table of orders (node:sqlite, no
 * native build), given to background jobs that run in worker threads. The tool runs here, on
 * the main thread, next to the database; a job's call crosses its thread's link, is validated
 * against the tool's schema here, and its answer goes back to the job's model.
 *
 *   node app.mjs --sim                      # forkpool's simulated model, scripted: no key, no network
 *   MODEL_BASE_URL=http://127.0.0.1:8000/v1 node app.mjs "Has order 1042 shipped?"
 *
 * Prints one JSON line per tool call and result, then the job's answer. The job also calls a tool
 * of an MCP server (@modelcontextprotocol/server-filesystem, needs @modelcontextprotocol/client).
 */
import { DatabaseSync } from 'node:sqlite';
import { fileURLToPath } from 'node:url';
import { BackgroundManager, loadConfig, tool } from 'forkpool';
import { startSimServer } from 'forkpool/sim';

// The embedder's data: a table of orders (in memory here; a file path works the same).
const db = new DatabaseSync(':memory:');
db.exec('CREATE TABLE orders (id INTEGER PRIMARY KEY, customer TEXT NOT NULL, status TEXT NOT NULL, total_cents INTEGER NOT NULL)');
const insert = db.prepare('INSERT INTO orders (id, customer, status, total_cents) VALUES (?, ?, ?, ?)');
insert.run(1041, 'Ada', 'delivered', 4_200);
insert.run(1042, 'Grace', 'shipped', 12_950);
insert.run(1043, 'Linus', 'pending', 799);

/** A host tool: name, description, a JSON Schema (a zod schema works too), and run(args, ctx). */
const lookupOrder = tool({
  name: 'lookup_order',
  description: 'Look an order up by its id: customer, status and total.',
  parameters: { type: 'object', properties: { id: { type: 'integer', minimum: 1 } }, required: ['id'], additionalProperties: false },
  timeoutMs: 5_000,
  /** @param {{ id: number }} args */
  run: ({ id }, ctx) => {
    // ctx.signal aborts on cancel, timeout or the job's thread dying; a quick query needs no check.
    if (ctx.signal.aborted) return 'stopped';
    const row = db.prepare('SELECT id, customer, status, total_cents FROM orders WHERE id = ?').get(id);
    // A string or any JSON value; the model reads JSON as text.
    if (!row) return `no order ${id}`;
    return { id: Number(row.id), customer: String(row.customer), status: String(row.status), total_cents: Number(row.total_cents) };
  },
});

// An MCP server (docs/tools.md "MCP servers"): the reference filesystem server, run with this
// Node over stdio and given this folder; its tools join the same catalog as mcp__files__<tool>.
// The manager holds one connection to it, whatever the jobs; a call runs on the main thread.
const filesServer = fileURLToPath(import.meta.resolve('@modelcontextprotocol/server-filesystem/dist/index.js'));
const mcpServers = { files: { command: process.execPath, args: [filesServer, process.cwd()], trusted: true, timeoutMs: 10_000 } };

const question = process.argv.slice(2).find((arg) => !arg.startsWith('--')) ?? 'Has order 1042 shipped?';
const useSim = process.argv.includes('--sim') || !process.env.MODEL_BASE_URL;
// Scripted so the demo is the same every run: the model asks for the order, then answers.
const sim = useSim
  ? await startSimServer({
      script: [
        { toolCalls: [{ name: 'lookup_order', arguments: JSON.stringify({ id: 1042 }), id: 'call-1' }] },
        { toolCalls: [{ name: 'mcp__files__list_allowed_directories', arguments: '{}', id: 'call-2' }] },
        { content: 'Order 1042 (Grace) has shipped; its total is $129.50.' },
      ],
    })
  : undefined;

const config = loadConfig({
  config: {
    ...(sim ? { baseUrl: sim.url } : { baseUrl: process.env.MODEL_BASE_URL }),
    ...(process.env.MODEL_API_KEY ? { apiKey: process.env.MODEL_API_KEY } : {}),
    workspaceRoot: process.cwd(),
    // Offered to every job by name, beside the built-ins it should have.
    tools: ['read_file', 'lookup_order', 'mcp__files__list_allowed_directories'],
    mcpServers,
  },
});
const manager = new BackgroundManager({ config, tools: [lookupOrder] });
manager.on('progress', ({ event }) => {
  if (event.type === 'tool_call') console.log(JSON.stringify({ tool_call: event.name, args: event.args }));
  if (event.type === 'tool_result') console.log(JSON.stringify({ tool_result: event.name, ok: event.ok, output: event.output }));
});
try {
  // The MCP server connects in the background: wait for it, so the first job is offered its tools.
  await manager.tools.start();
  const job = manager.spawn({ task: question, label: 'orders' });
  const record = await manager.result(job.id);
  console.log(JSON.stringify({ job: record.id, status: record.status, tools: record.tools, answer: record.resultText }));
} finally {
  await manager.close();
  await sim?.close();
}
