/**
 * A job's side of the adaptive gate (src/worker/remote-gate.ts): its model requests ask the
 * main thread over the job's own port, as every other question does. Through a real
 * MessageChannel: what it sends, that an abort withdraws the request, and that a port closed
 * mid-wait (the main thread ended the job, or it died) never leaves a request hanging.
 */
import { MessageChannel } from 'node:worker_threads';
import { once } from 'node:events';
import { describe, expect, it } from 'vitest';
import { RemoteRateGate } from '../../src/worker/remote-gate.js';
import { AbortError } from '../../src/shared/errors.js';
import { mainMessageSchema, workerMessageSchema, type WorkerMessage } from '../../src/shared/protocol.js';
import { useCleanup } from '../helpers/cleanup.js';

const cleanups = useCleanup();

function link() {
  const { port1: main, port2: job } = new MessageChannel();
  cleanups.add(() => {
    main.close();
    job.close();
  });
  const received: WorkerMessage[] = [];
  let arrived: () => void = () => {};
  main.on('message', (raw: unknown) => {
    // What the Attempt would accept: every gate message passes its schema.
    received.push(workerMessageSchema.parse(raw) as WorkerMessage);
    arrived();
  });
  const next = () => new Promise<void>((resolve) => (arrived = resolve));
  const gate = new RemoteRateGate('bg-1', (message) => job.postMessage(message), job);
  return { main, job, gate, received, next };
}

describe('RemoteRateGate (the job side of the adaptive gate, over the job port)', () => {
  it('asks with gate-admit, goes on gate-admitted, and settles with gate-settle', async () => {
    const { main, job, gate, received, next } = link();
    job.on('message', (raw: unknown) => {
      const message = mainMessageSchema.parse(raw);
      if (message.type === 'gate-admitted') gate.admitted(message.ticket);
    });
    const asked = next();
    const admitted = gate.admit(new AbortController().signal);
    await asked;
    expect(received).toEqual([{ type: 'gate-admit', jobId: 'bg-1', ticket: 1 }]);
    main.postMessage({ type: 'gate-admitted', ticket: 1 });
    const ticket = await admitted;
    const settled = next();
    ticket.settle({ kind: 'overloaded', status: 429, latencyMs: 5, retryAfterMs: 100 });
    await settled;
    expect(received[1]).toEqual({
      type: 'gate-settle',
      jobId: 'bg-1',
      ticket: 1,
      outcome: { kind: 'overloaded', status: 429, latencyMs: 5, retryAfterMs: 100 },
    });
  });

  it('an abort while waiting rejects with AbortError and withdraws the request (gate-settle abandoned)', async () => {
    const { gate, received, next } = link();
    const controller = new AbortController();
    const asked = next();
    const waiting = gate.admit(controller.signal);
    await asked;
    const withdrawn = next();
    controller.abort(new Error('cancelled'));
    await expect(waiting).rejects.toBeInstanceOf(AbortError);
    await withdrawn;
    expect(received.map((m) => m.type === 'gate-settle' && m.outcome.kind)).toEqual([false, 'abandoned']);
    // A late answer to the withdrawn ticket is ignored.
    gate.admitted(1);
  });

  it('a port that closes while a request waits lets it go instead of hanging', async () => {
    const { main, job, gate, next } = link();
    const asked = next();
    const waiting = gate.admit(new AbortController().signal);
    await asked;
    // The main thread ends the job (or its thread dies): no answer will ever come.
    const closed = once(job, 'close');
    main.close();
    await closed;
    await expect(waiting).resolves.toHaveProperty('settle');
  });
});
