/**
 * Issue 18, "the host must not die", the server's part: requests and storage faults that
 * must neither take the server down nor turn into a 500 with a stack in the log.
 */
import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { createLogger } from '../../src/main/setup/logger.js';
import { useCleanup } from '../helpers/cleanup.js';
import { startTestServer } from '../helpers/server.js';

/** A real pino logger whose JSON lines are kept in memory. */
function capturedLogger(): { logger: ReturnType<typeof createLogger>; lines: string[] } {
  const lines: string[] = [];
  const destination = new Writable({
    write(chunk, _encoding, done) {
      lines.push(...String(chunk).split('\n').filter(Boolean));
      done();
    },
  });
  return { logger: createLogger({ level: 'info', secrets: [], pretty: false, destination }), lines };
}

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
