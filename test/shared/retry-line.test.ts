/**
 * The retry line a person reads on stderr (issue 36 §2): a long cause is shortened, but the
 * advice at its end (` — check --base-url / baseUrl`) is kept whole, never cut mid-word.
 */
import { describe, expect, it } from 'vitest';
import { retryLine } from '../../src/shared/model-errors.js';

describe('the retry line', () => {
  it("keeps a long reason's closing advice whole and shortens the cause before it", () => {
    const reason =
      'connection error: ENOTFOUND no-such-host.invalid (the host name does not resolve) (POST http://no-such-host.invalid/v1/chat/completions) — check --base-url / baseUrl';
    const line = retryLine({ attempt: 1, maxRetries: 3, delayMs: 500, reason, host: 'no-such-host.invalid' });
    expect(line).toMatch(
      /^model request to no-such-host\.invalid failed \(connection error: ENOTFOUND no-such-host\.invalid .*… — check --base-url \/ baseUrl\), retrying in 0\.5 s \(1\/3\)$/,
    );
    expect(line.length).toBeLessThan(260);
    // A short one is whole; a long one without advice is cut with an ellipsis.
    expect(retryLine({ attempt: 2, delayMs: 1500, reason: 'HTTP 500: boom' })).toBe(
      'model request to the model endpoint failed (HTTP 500: boom), retrying in 1.5 s (retry 2)',
    );
    expect(retryLine({ attempt: 1, delayMs: 0, reason: 'x'.repeat(300) })).toContain(`(${'x'.repeat(159)}…)`);
  });
});
