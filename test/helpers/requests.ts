/**
 * Readers of the sim's request log (`sim.requests`, bodies kept by `startSim` / `startTestSim`):
 * the messages of a request, its system prompt and tools, the requests of one job, how often a
 * job ran, and the tool results the model was sent.
 *
 *   expect(runsOf(sim, '(fan 3.)')).toBe(1);
 *   const [first] = toolMessagesOf(sim.requests[1]?.body);
 */
import type { RecordedRequest, SimServer } from '../../src/sim/index.js';

type Message = { role: string; content: unknown; tool_call_id?: string; tool_calls?: Array<{ function: { name: string; arguments: string } }> };

export function messagesOf(request: RecordedRequest): Message[] {
  return request.body.messages as Message[];
}

export function systemOf(request: RecordedRequest): string {
  const first = messagesOf(request)[0];
  return first?.role === 'system' && typeof first.content === 'string' ? first.content : '';
}

export function toolNames(request: RecordedRequest): string[] {
  return ((request.body.tools ?? []) as Array<{ function: { name: string } }>).map((t) => t.function.name);
}

export function toolSchema(request: RecordedRequest, name: string): any {
  return ((request.body.tools ?? []) as Array<{ function: { name: string; parameters: unknown } }>).find((t) => t.function.name === name)?.function.parameters;
}

/** Requests whose first user message is exactly `task` (a job's own conversation). */
export function requestsForTask(sim: SimServer, task: string): RecordedRequest[] {
  return sim.requests.filter((r) => messagesOf(r).find((m) => m.role === 'user')?.content === task);
}

/** How many runs of a job the sim saw: first model requests (system + one user message) whose task contains `text`. */
export function runsOf(sim: SimServer, text: string): number {
  return sim.requests.filter((r) => {
    const messages = (r.body?.messages ?? []) as Array<{ role: string; content: unknown }>;
    return messages.length === 2 && messages[1]?.role === 'user' && String(messages[1].content).includes(text);
  }).length;
}

/** The `tool` messages of a recorded request body, in order, content as strings. */
export function toolMessagesOf(body: { messages?: Array<{ role: string; content?: unknown }> } | undefined): string[] {
  return (body?.messages ?? []).filter((m) => m.role === 'tool').map((m) => (typeof m.content === 'string' ? m.content : JSON.stringify(m.content)));
}

/** Every tool result the model was sent over all requests, by call id (later requests repeat the history). */
export function toolResultsSent(sim: SimServer): Map<string, string> {
  const out = new Map<string, string>();
  for (const request of sim.requests) {
    const messages = (request.body as { messages?: Message[] } | undefined)?.messages ?? [];
    for (const m of messages) if (m.role === 'tool' && m.tool_call_id) out.set(m.tool_call_id, String(m.content));
  }
  return out;
}
