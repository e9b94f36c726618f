/**
 * Issue 18, "the host must not die", the server's part: requests and storage faults that
 * must neither take the server down nor turn into a 500 with a stack in the log.
 */
import { describe, expect, it } from 'vitest';
import { useCleanup } from '../helpers/cleanup.js';
import { capturedLogger } from '../helpers/logs.js';
import { startTestServer } from '../helpers/server.js';

describe('server: unauthenticated input', () => {
  const cleanup = useCleanup();

  it.each(['%', '%zz', '%E0%A4%A', 'abc%'])('a malformed page cookie (%j) is a 401 "not signed in", with no stack in the log', async (value) => {
    const { logger, lines } = capturedLogger();
    const { url } = await startTestServer(cleanup, {}, {}, { logger });
    for (const path of ['/v1/jobs', '/']) {
      const response = await fetch(`${url}${path}`, { headers: { cookie: `forkpool_token=${value}` } });
      expect(response.status, path).toBe(401);
      await response.text();
    }
    expect(lines.filter((line) => /"level":50|stack|URIError/.test(line))).toEqual([]);
  });
});
