import { isIP } from 'node:net';
import { DEFAULTS } from '../shared/defaults.js';
import { ConfigError } from '../shared/errors.js';
import { generateToken } from './auth.js';

/**
 * What `forkpool serve` checks before it binds: the bearer token is long enough to resist
 * guessing, and an address other than loopback is served only with a clear warning (the
 * token is then the only thing between the network and a shell in the workspace).
 */

export interface ServerToken {
  token: string;
  /** Made here (print it once; it is nowhere else). */
  generated: boolean;
}

/**
 * The server's token: `given` (the `token` option), else `FORKPOOL_SERVER_TOKEN`, else a fresh
 * one. Throws {@link ConfigError} for one shorter than `DEFAULTS.server.minTokenChars`, naming
 * where it came from and its length (never the token).
 */
export function serverToken(given: string | undefined, env: NodeJS.ProcessEnv): ServerToken {
  const fromEnv = env.FORKPOOL_SERVER_TOKEN;
  const [token, field] = given !== undefined ? [given, 'token'] : fromEnv ? [fromEnv, 'FORKPOOL_SERVER_TOKEN'] : [undefined, ''];
  if (token === undefined) return { token: generateToken(), generated: true };
  const min = DEFAULTS.server.minTokenChars;
  if (token.trim().length < min) {
    throw new ConfigError([
      {
        field,
        expected: `a token of at least ${min} characters (a guessable token opens the API and its tools to anyone who can reach the port)`,
        received: `${token.trim().length} character${token.trim().length === 1 ? '' : 's'}`,
      },
    ]);
  }
  return { token, generated: false };
}

/** `localhost`, 127.0.0.0/8, `::1` and IPv4-mapped loopback: reachable from this machine only. */
export function isLoopbackHost(host: string): boolean {
  const h = host.replace(/^\[|\]$/g, '').toLowerCase();
  if (h === 'localhost' || h.endsWith('.localhost')) return true;
  if (isIP(h) === 4) return h.startsWith('127.');
  if (isIP(h) === 6) {
    // The URL parser writes IPv6 in its shortest form: ::1, and ::ffff:7f.. for ::ffff:127.x.y.z.
    const short = new URL(`http://[${h}]/`).hostname;
    return short === '[::1]' || short.startsWith('[::ffff:7f');
  }
  return false;
}

/** The warning for a bind to `host`; `undefined` for loopback. */
export function exposureWarning(host: string): string | undefined {
  if (isLoopbackHost(host)) return undefined;
  const what = host === '0.0.0.0' || host === '::' ? 'every network interface' : `the address ${host}`;
  return `serving on ${what}, not loopback: anyone who can reach this port and holds the token can start jobs that run tools (bash, writes) in the workspace. Use --host 127.0.0.1 unless that is meant, and keep the token secret`;
}
