import { describe, expect, it } from 'vitest';
import { CompletionGate } from '../../../src/main/bullmq/completion-gate.js';

describe('CompletionGate', () => {
  it('accepts one completion per launch and tells a second report of it from a rival run', () => {
    const gate = new CompletionGate();
    expect(gate.claim('job-1.1', 'run-a')).toBe(true);
    // The events stream and the poll report the same run: refused, but a repeat (logged at debug).
    expect(gate.claim('job-1.1', 'run-a')).toBe(false);
    expect(gate.isRepeat('job-1.1', 'run-a')).toBe(true);
    // Another run of the same job: refused, and not a repeat (a warning).
    expect(gate.claim('job-1.1', 'run-b')).toBe(false);
    expect(gate.isRepeat('job-1.1', 'run-b')).toBe(false);
    expect(gate.rejected.map((r) => r.why)).toEqual(['duplicate', 'duplicate']);
  });

  it('never accepts a stale run, and lets a real one through after an unconfirmed claim', () => {
    const gate = new CompletionGate();
    gate.markStale('old-run');
    expect(gate.claim('job-2.1', 'old-run')).toBe(false);
    expect(gate.isRepeat('job-2.1', 'old-run')).toBe(false);
    expect(gate.claim('job-2.1', 'lying-run')).toBe(true);
    gate.release('job-2.1', 'lying-run');
    expect(gate.isRepeat('job-2.1', 'lying-run')).toBe(false);
    expect(gate.claim('job-2.1', 'real-run')).toBe(true);
  });
});
