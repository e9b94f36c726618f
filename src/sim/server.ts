/**
 * The simulated OpenAI-compatible chat-completions server: a real `node:http` server on
 * loopback. Routing, fault delivery, pacing and lifecycle live here; what the model says is
 * decided in agent-behaviour.ts (default) or script.ts (scripted mode).
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { endlessReply, plausibleReply } from './agent-behaviour.js';
import { applyReplyFault, errorBody, faultErrorBody, HTTP_ERROR_STATUS, randomFault, REPLY_FAULTS } from './faults.js';
import { resolveOptions, SIM_DEFAULTS, validateOptions, type ResolvedSimOptions } from './options.js';
import { completionTokens, estimateTokens, promptTokens, type SimReply } from './reply.js';
import { SIM_CREATED, usageOf, type ResponseMeta, type StreamChunk, type WireUsage } from './response.js';
import { asChatBody, cachedPrefix, wireMessages, type SimWire } from './wire-requests.js';
import { refusal, wantsThinking } from './wire-checks.js';
import { sseText, WIRE_FORMATS, type CacheUsage, type WireFormat } from './wire-responses.js';
import { requestRng } from './rng.js';
import { typedReply } from './typed-reply.js';
import { ScriptCursor, stepReply } from './script.js';
import { BodyTooLargeError, cutAfterFlush, readBody, sendError, sendJson, sleep, startSse, waitForAbort } from './transport.js';
import type { FaultKind, FaultSpec, RecordedRequest, ScriptStep, SimServer, SimServerOptions } from './types.js';
import { ConfigError } from '../shared/errors.js';
import { registerSimulatorUrl, unregisterSimulatorUrl } from '../shared/simulator-urls.js';

export const SIM_MODEL_ID = 'forkpool-sim';
/** The three wires' paths: Chat Completions, the Responses API, Anthropic Messages. */
const WIRE_PATHS: ReadonlyMap<string, SimWire> = new Map([
  ['/v1/chat/completions', 'chat'],
  ['/chat/completions', 'chat'],
  ['/v1/responses', 'responses'],
  ['/responses', 'responses'],
  ['/v1/messages', 'anthropic'],
  ['/messages', 'anthropic'],
]);
/** Prompt-cache prefixes remembered (Anthropic wire): the oldest is forgotten past this. */
const PROMPT_CACHE_ENTRIES = 1_000;
const MODEL_PATHS = new Set(['/v1/models', '/models']);

/** Starts the simulator; rejects with a `ConfigError` naming the bad option. */
export async function startSimServer(opts: SimServerOptions = {}): Promise<SimServer> {
  const sim = new SimHttpServer(opts, resolveOptions(opts));
  await sim.listen();
  return sim;
}

/** What one chat request will get, decided before any waiting. */
interface Plan {
  n: number;
  format: WireFormat;
  cache: CacheUsage;
  stream: boolean;
  includeUsage: boolean;
  meta: ResponseMeta;
  fault: FaultSpec | undefined;
  reply: SimReply;
  usage: WireUsage;
  initialDelayMs: number;
}

class SimHttpServer implements SimServer {
  readonly requests: RecordedRequest[] = [];
  readonly scriptErrors: string[] = [];
  url = '';
  port = 0;
  #raw: SimServerOptions;
  #options: ResolvedSimOptions;
  #script: ScriptCursor | undefined;
  #count = 0;
  /** The Anthropic wire's prompt cache: prefixes already seen are reported as cache reads. */
  #promptCache = new Set<string>();

  get requestCount(): number {
    return this.#count;
  }
  #inFlight = 0;
  #overCapacity = 0;
  #peakConcurrency = 0;

  get overCapacity(): number {
    return this.#overCapacity;
  }

  get peakConcurrency(): number {
    return this.#peakConcurrency;
  }

  /** TCP connections open now (idle keep-alive ones included). */
  get openConnections(): number {
    return this.#sockets.size;
  }

  /** The most TCP connections open at once since the server started. */
  get peakConnections(): number {
    return this.#peakConnections;
  }
  #peakConnections = 0;
  #server: Server;
  #sockets = new Set<Socket>();
  #active = new Set<AbortController>();
  #closing: Promise<void> | undefined;

  constructor(raw: SimServerOptions, options: ResolvedSimOptions) {
    this.#raw = { ...raw };
    this.#options = options;
    this.#script = options.script ? new ScriptCursor(options.script, this.scriptErrors) : undefined;
    this.#server = createServer((req, res) => this.#onRequest(req, res));
    // Short keep-alive so idle client sockets do not linger; close() destroys them anyway.
    this.#server.keepAliveTimeout = 5_000;
    this.#server.on('connection', (socket) => {
      this.#sockets.add(socket);
      this.#peakConnections = Math.max(this.#peakConnections, this.#sockets.size);
      socket.on('close', () => this.#sockets.delete(socket));
    });
    this.#server.on('clientError', (_error, socket) => socket.destroy());
  }

  listen(): Promise<void> {
    return new Promise((resolve, reject) => {
      this.#server.once('error', reject);
      this.#server.listen(this.#options.port, this.#options.host, () => {
        this.#server.off('error', reject);
        const address = this.#server.address() as AddressInfo;
        this.port = address.port;
        const host = address.family === 'IPv6' ? `[${address.address}]` : address.address;
        this.url = `http://${host}:${address.port}/v1`;
        registerSimulatorUrl(this.url);
        resolve();
      });
    });
  }

  setOptions(patch: Partial<SimServerOptions>): void {
    const issues = validateOptions(patch);
    if (issues.length > 0) throw new ConfigError(issues);
    this.#raw = { ...this.#raw, ...patch };
    this.#options = resolveOptions(this.#raw);
    if ('script' in patch) this.#script = this.#options.script ? new ScriptCursor(this.#options.script, this.scriptErrors) : undefined;
  }

  assertScriptDone(): void {
    if (this.#script) this.#script.assertDone();
    else if (this.scriptErrors.length > 0) new ScriptCursor([], this.scriptErrors).assertDone();
  }

  close(): Promise<void> {
    unregisterSimulatorUrl(this.url);
    this.#closing ??= new Promise<void>((resolve) => {
      // Order: stop intake first, then end every wait (clears timers), then cut the sockets.
      this.#server.close(() => resolve());
      for (const controller of this.#active) controller.abort(new Error('sim server closed'));
      for (const socket of this.#sockets) socket.destroy();
      this.#server.closeAllConnections();
    });
    return this.#closing;
  }

  #onRequest(req: IncomingMessage, res: ServerResponse): void {
    const controller = new AbortController();
    this.#active.add(controller);
    // 'close' fires when the response is done or the client went away: either way, stop waiting.
    res.on('close', () => {
      controller.abort(new Error('response closed'));
      this.#active.delete(controller);
    });
    req.on('error', () => {});
    this.#route(req, res, controller.signal).catch((error: unknown) => {
      if (controller.signal.aborted || res.writableEnded) return;
      if (error instanceof BodyTooLargeError) return sendError(res, 413, error.message, 'invalid_request_error', 'body_too_large');
      if (!res.headersSent) sendError(res, 500, `sim internal error: ${String(error)}`, 'server_error', 'internal_error');
      else res.destroy();
    });
  }

  async #route(req: IncomingMessage, res: ServerResponse, signal: AbortSignal): Promise<void> {
    const path = (req.url ?? '/').split('?')[0]?.replace(/\/+$/, '') || '/';
    const wire = WIRE_PATHS.get(path);
    if (wire) {
      if (req.method !== 'POST') return sendError(res, 405, `use POST for ${path}`, 'invalid_request_error', 'method_not_allowed');
      return this.#complete(req, res, signal, wire);
    }
    if (MODEL_PATHS.has(path) || path.startsWith('/v1/models/')) {
      if (req.method !== 'GET') return sendError(res, 405, `use GET for ${path}`, 'invalid_request_error', 'method_not_allowed');
      const model = { id: SIM_MODEL_ID, object: 'model', created: SIM_CREATED, owned_by: 'forkpool' };
      if (path.startsWith('/v1/models/')) return sendJson(res, 200, JSON.stringify({ ...model, id: decodeURIComponent(path.slice(11)) }));
      return sendJson(res, 200, JSON.stringify({ object: 'list', data: [model] }));
    }
    sendError(res, 404, `unknown route ${req.method ?? 'GET'} ${path}`, 'invalid_request_error', 'not_found');
  }

  async #complete(req: IncomingMessage, res: ServerResponse, signal: AbortSignal, wire: SimWire): Promise<void> {
    const raw = await readBody(req, SIM_DEFAULTS.maxBodyBytes);
    let body: unknown;
    try {
      body = JSON.parse(raw);
    } catch (error) {
      return sendError(res, 400, `request body is not valid JSON: ${(error as Error).message}`, 'invalid_request_error', 'invalid_json');
    }
    if (!body || typeof body !== 'object' || Array.isArray(body) || !wireMessages(wire, body as Record<string, unknown>)) {
      const field = wire === 'responses' ? 'input' : 'messages';
      return sendError(res, 400, `request body must be an object with a '${field}' array`, 'invalid_request_error', 'invalid_request');
    }
    // As Anthropic's API: a request that names no API version is refused.
    if (wire === 'anthropic' && !req.headers['anthropic-version']) {
      return sendJson(res, 400, JSON.stringify({ type: 'error', error: { type: 'invalid_request_error', message: 'anthropic-version: header is required' } }));
    }
    // What the real API refuses (a reasoning model's temperature, thinking lost from a tool-use turn): a 400 here too.
    const refused = refusal(wire, body as Record<string, unknown>);
    if (refused !== undefined) return sendJson(res, 400, WIRE_FORMATS[wire].errorBody(errorBody(400, refused, 'invalid_request_error', null)));
    const capacity = this.#options.capacity;
    if (capacity !== undefined && this.#inFlight >= capacity) return this.#refuseOverCapacity(res, capacity);
    this.#inFlight++;
    this.#peakConcurrency = Math.max(this.#peakConcurrency, this.#inFlight);
    // 'close' comes once, whether the response ended or the client left.
    res.once('close', () => this.#inFlight--);
    const n = ++this.#count;
    const plan = this.#plan(n, wire, body as Record<string, unknown>);
    const record: RecordedRequest = { n, wire, body: this.#options.recordBodies ? body : undefined, receivedAt: Date.now() };
    if (plan?.fault) record.fault = plan.fault.kind;
    this.requests.push(record);
    // Bounded: the oldest entry goes (shift on a packed array is cheap in V8).
    while (this.requests.length > this.#options.requestLogLimit) this.requests.shift();
    if (!plan) return sendError(res, 500, `sim script exhausted at request ${n}`, 'server_error', 'sim_script_exhausted');
    await this.#deliver(plan, res, signal, record).catch((error: unknown) => {
      // A wait ended by the client leaving or by close(): nothing left to send.
      if (!signal.aborted) throw error;
    });
  }

  /** A rate-limited endpoint's answer: at once, 429 with Retry-After, no work done. */
  #refuseOverCapacity(res: ServerResponse, capacity: number): void {
    this.#overCapacity++;
    const seconds = this.#options.capacityRetryAfterSeconds;
    const body = errorBody(
      429,
      `Rate limit reached: ${capacity} requests are already in flight (simulated server capacity).`,
      'rate_limit_error',
      'rate_limit_exceeded',
    );
    sendJson(res, 429, body, { 'retry-after': String(seconds), 'retry-after-ms': String(Math.round(seconds * 1000)) });
  }

  /** Decides fault, reply, usage and delay. Undefined when the script is exhausted. */
  #plan(n: number, wire: SimWire, raw: Record<string, unknown>): Plan | undefined {
    const o = this.#options;
    // The behaviours read Chat Completions; the other wires' requests are read as one.
    const body = asChatBody(wire, raw);
    const rng = requestRng(o.seed, n);
    // Draw in a fixed order (jitter, then fault) so every request's numbers are reproducible.
    const jitter = rng() * o.jitterMs;
    let fault: FaultSpec | undefined = o.faults[n] ?? randomFault(rng, o.faultRate, o.faultKinds);
    let step: ScriptStep | undefined;
    // A fault from `faults`/`faultRate` replaces the response and leaves the script step for the retry.
    if (!fault && this.#script) {
      step = this.#script.take(n);
      if (!step) return undefined;
      fault = step.fault;
    }
    let reply: SimReply;
    if (o.endlessToolCalls || fault?.kind === 'endless_tool_calls') reply = endlessReply(body, n);
    // A schema-bound request (response_format, or the submit_result tool) ends with a value of its schema.
    else reply = step ? stepReply(step, n) : typedReply(body, plausibleReply(body, n, o.researchSteps), n);
    if (fault && REPLY_FAULTS.has(fault.kind)) reply = applyReplyFault(fault.kind, reply, n);
    const usage = usageOf(step?.usage?.prompt_tokens ?? promptTokens(body), step?.usage?.completion_tokens ?? completionTokens(reply));
    const stream = body.stream === true;
    const streamOptions = body.stream_options as { include_usage?: unknown } | undefined;
    const format = WIRE_FORMATS[wire];
    return {
      n,
      format,
      cache: wire === 'anthropic' ? this.#promptCacheUsage(raw) : { read: 0, write: 0 },
      stream,
      includeUsage: stream && streamOptions?.include_usage === true,
      meta: {
        id: `${format.idPrefix}${n}`,
        model: o.servedModel ?? (typeof body.model === 'string' && body.model ? body.model : SIM_MODEL_ID),
        ...(wire === 'anthropic' && wantsThinking(raw) ? { thinking: true } : {}),
      },
      fault,
      reply,
      usage,
      // Non-stream responses pay their per-token time up front; streams pay it chunk by chunk.
      initialDelayMs: o.latencyMs + jitter + (stream ? 0 : o.perTokenMs * usage.completion_tokens),
    };
  }

  /** A marked prefix seen before is read from the cache; a new one is written to it. */
  #promptCacheUsage(raw: Record<string, unknown>): CacheUsage {
    const prefix = cachedPrefix(raw);
    if (!prefix) return { read: 0, write: 0 };
    const tokens = estimateTokens(prefix.length);
    if (this.#promptCache.has(prefix)) return { read: tokens, write: 0 };
    this.#promptCache.add(prefix);
    if (this.#promptCache.size > PROMPT_CACHE_ENTRIES) this.#promptCache.delete(this.#promptCache.values().next().value as string);
    return { read: 0, write: tokens };
  }

  async #deliver(plan: Plan, res: ServerResponse, signal: AbortSignal, record: RecordedRequest): Promise<void> {
    const kind: FaultKind | undefined = plan.fault?.kind;
    // Never answers: the client's timeout or abort, or close(), ends it.
    if (kind === 'hang_before_headers') return waitForAbort(signal);
    await sleep(plan.initialDelayMs, signal);
    const headers = { 'x-request-id': `req_sim_${plan.n}` };
    const status = kind ? HTTP_ERROR_STATUS[kind] : undefined;
    if (kind && status !== undefined) {
      const extra: Record<string, string> = {};
      if (kind === '429') {
        const seconds = plan.fault?.retryAfterSeconds ?? SIM_DEFAULTS.retryAfterSeconds;
        extra['retry-after'] = String(seconds);
        extra['retry-after-ms'] = String(Math.round(seconds * 1000));
      }
      return sendJson(res, status, plan.format.errorBody(faultErrorBody(kind, plan.n, plan.meta.model)), { ...headers, ...extra });
    }
    if (plan.stream) return this.#deliverStream(plan, res, signal, headers, kind, record);
    const json = JSON.stringify(plan.format.body(plan.reply, plan.meta, plan.usage, plan.cache));
    if (kind === 'bad_json') return sendJson(res, 200, `{"id": "${plan.meta.id}", "object": "chat.completion", "choices": [ <simulated bad json>`, headers);
    if (kind === 'truncated_stream') {
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(json)), ...headers });
      return cutAfterFlush(res, json.slice(0, Math.floor(json.length / 2)));
    }
    if (kind === 'stall_mid_stream' || kind === 'slow_drip') {
      res.writeHead(200, { 'content-type': 'application/json', ...headers });
      res.write(`{"id": "${plan.meta.id}", `);
      // JSON allows whitespace between tokens: keep the connection busy, never finish.
      return this.#keepAlive(res, signal, ' \n', kind === 'slow_drip' ? dripInterval(plan) : SIM_DEFAULTS.keepAliveIntervalMs);
    }
    sendJson(res, 200, json, headers);
  }

  async #deliverStream(
    plan: Plan,
    res: ServerResponse,
    signal: AbortSignal,
    headers: Record<string, string>,
    kind: FaultKind | undefined,
    record: RecordedRequest,
  ): Promise<void> {
    const chunks = plan.format.chunks(plan.reply, plan.meta, plan.usage, plan.cache, {
      maxTokensPerChunk: this.#options.maxTokensPerChunk,
      includeUsage: plan.includeUsage,
    });
    startSse(res, headers);
    record.chunks = 0;
    const send = (chunk: StreamChunk) => {
      res.write(sseText(chunk));
      record.chunks = (record.chunks ?? 0) + 1;
    };
    const first = chunks[0];
    if (first) send(first);
    if (kind === 'slow_drip') {
      // Steady data, never idle long, never finished: the reply's open chunks, then empty deltas.
      const interval = dripInterval(plan);
      const open = chunks.slice(1).filter((c) => !c.closing);
      for (let i = 0; ; i++) {
        await sleep(interval, signal);
        send(open[i] ?? plan.format.filler(plan.meta));
      }
    }
    if (kind === 'stall_mid_stream') return this.#keepAlive(res, signal, ': keep-alive\n\n');
    if (kind === 'bad_json') {
      res.write(`data: {"id": "${plan.meta.id}", "choices": [{"delta": {"content": <simulated bad json>\n\n`);
      res.end(plan.format.end);
      return;
    }
    if (kind === 'truncated_stream') {
      // Stops before any finish_reason, after about half of the content chunks, without [DONE].
      const open = chunks.filter((c) => !c.closing);
      const cut = Math.min(open.length, Math.max(2, Math.floor(open.length / 2)));
      for (let i = 1; i < cut - 1; i++) await this.#sendChunk(res, signal, open[i], send);
      const lastChunk = cut >= 2 ? open[cut - 1] : undefined;
      if (lastChunk) await sleep(this.#options.perTokenMs * lastChunk.tokens, signal);
      return cutAfterFlush(res, lastChunk ? sseText(lastChunk) : ': cut\n\n');
    }
    for (const chunk of chunks.slice(1)) await this.#sendChunk(res, signal, chunk, send);
    res.end(plan.format.end);
  }

  async #sendChunk(res: ServerResponse, signal: AbortSignal, chunk: StreamChunk | undefined, send: (chunk: StreamChunk) => void): Promise<void> {
    if (!chunk) return;
    await sleep(this.#options.perTokenMs * chunk.tokens, signal);
    send(chunk);
  }

  async #keepAlive(res: ServerResponse, signal: AbortSignal, text: string, intervalMs: number = SIM_DEFAULTS.keepAliveIntervalMs): Promise<void> {
    for (;;) {
      await sleep(intervalMs, signal);
      res.write(text);
    }
  }
}

function dripInterval(plan: Plan): number {
  return plan.fault?.dripIntervalMs ?? SIM_DEFAULTS.dripIntervalMs;
}
