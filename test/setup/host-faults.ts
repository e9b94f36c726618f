/**
 * Setup file of every test file (vitest.config.ts `setupFiles`): a test fails when a host fault
 * was printed while it ran (see test/helpers/host-faults.ts), unless it opted out with
 * `allowHostFaults`. Watches this process's warnings, unhandled rejections and stderr (worker
 * threads' output is piped into it); child processes' output is noted by the helpers that pipe it.
 */
import { afterAll, afterEach, expect } from 'vitest';
import { noteHostFault, noteHostOutput, takeHostFaults } from '../helpers/host-faults.js';

const WATCHING = Symbol.for('forkpool.test.hostFaultsWatching');
const holder = globalThis as { [WATCHING]?: true };

// Once per process: with isolation off, setup files run again for each test file.
if (!holder[WATCHING]) {
  holder[WATCHING] = true;
  process.on('warning', (warning: Error & { code?: string }) => {
    const text = `${warning.code ? `[${warning.code}] ` : ''}${warning.name}: ${warning.message}`;
    if (warning.code === 'FORKPOOL_HOST_FAULT') noteHostFault('process warning', text);
    else noteHostOutput('process warning', text);
  });
  process.on('unhandledRejection', (reason) =>
    noteHostFault('unhandled rejection', reason instanceof Error ? (reason.stack ?? reason.message) : String(reason)),
  );
  // Node prints warnings itself and pipes worker threads' stderr here: both pass through write().
  const write = process.stderr.write.bind(process.stderr) as (...args: unknown[]) => boolean;
  process.stderr.write = (chunk: unknown, ...rest: unknown[]) => {
    // A warning of this thread may be counted twice (its event, its line): a worker thread's has only its line.
    if (typeof chunk === 'string') noteHostOutput('stderr', chunk);
    else if (chunk instanceof Uint8Array) noteHostOutput('stderr', Buffer.from(chunk).toString('utf8'));
    return write(chunk, ...rest);
  };
}

function check(when: string): void {
  const faults = takeHostFaults();
  expect(faults, `host fault(s) printed ${when} (opt out with allowHostFaults if the test provokes them on purpose):\n${faults.join('\n')}`).toEqual([]);
}

afterEach(() => check('during this test'));
afterAll(() => check('after the last test of this file'));
