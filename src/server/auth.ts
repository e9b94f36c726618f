import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';

/** The page's cookie: set by `/login?token=…`, sent by the browser with every fetch and EventSource. */
export const AUTH_COOKIE = 'forkpool_token';

/** A fresh token for a server started without `FORKPOOL_SERVER_TOKEN`: 32 random bytes, URL-safe. */
export function generateToken(): string {
  return randomBytes(32).toString('base64url');
}

/** Constant-time: compares digests, so neither length nor a common prefix leaks through timing. */
export function tokensMatch(given: string, expected: string): boolean {
  const a = createHash('sha256').update(given).digest();
  const b = createHash('sha256').update(expected).digest();
  return timingSafeEqual(a, b);
}

/** Route config flag: `{ config: { public: true } }` skips the token check (only `/healthz` and `/login`). */
declare module 'fastify' {
  interface FastifyContextConfig {
    public?: boolean;
  }
}

function presentedToken(request: FastifyRequest): string | undefined {
  const header = request.headers.authorization;
  if (typeof header === 'string' && header.startsWith('Bearer ')) return header.slice('Bearer '.length).trim();
  const cookies = request.headers.cookie ?? '';
  for (const part of cookies.split(';')) {
    const [name, ...value] = part.trim().split('=');
    if (name === AUTH_COOKIE) return decodeCookieValue(value.join('='));
  }
  return undefined;
}

/**
 * A cookie value as sent. A malformed escape (`%zz`, a lone `%`) is kept as it came: it then
 * fails the token check like any wrong token (a 401), where `decodeURIComponent` would throw
 * into the error handler (a 500 and a logged stack on every such request).
 */
function decodeCookieValue(raw: string): string {
  try {
    return decodeURIComponent(raw);
  } catch {
    return raw;
  }
}

/**
 * Every route but the public ones needs the bearer token (header) or the page's cookie.
 * The cookie is HttpOnly and SameSite=Strict: another site can neither read it nor make the
 * browser send it, and with no CORS it cannot read any answer either.
 */
export function registerAuth(app: FastifyInstance, token: string): void {
  app.addHook('onRequest', async (request: FastifyRequest, reply: FastifyReply) => {
    if (request.routeOptions.config?.public === true) return;
    const given = presentedToken(request);
    if (given !== undefined && tokensMatch(given, token)) return;
    reply.header('www-authenticate', 'Bearer realm="forkpool"');
    if (request.method === 'GET' && (request.url === '/' || request.url.startsWith('/?'))) {
      return reply.code(401).type('text/html; charset=utf-8').send(LOGIN_HINT);
    }
    return reply
      .code(401)
      .send({ error: { code: 'UNAUTHORIZED', message: given === undefined ? 'a bearer token is required (Authorization: Bearer <token>)' : 'wrong token' } });
  });

  app.get('/login', { config: { public: true } }, async (request, reply) => {
    const query = request.query as Record<string, unknown>;
    const given = typeof query.token === 'string' ? query.token : '';
    if (!given || !tokensMatch(given, token)) return reply.code(401).type('text/html; charset=utf-8').send(LOGIN_HINT);
    reply.header('set-cookie', `${AUTH_COOKIE}=${encodeURIComponent(token)}; HttpOnly; SameSite=Strict; Path=${app.prefix || '/'}`);
    return reply.code(303).header('location', `${app.prefix}/`).send();
  });
}

const LOGIN_HINT = `<!doctype html><html lang="en"><meta charset="utf-8"><title>forkpool: sign in</title>
<body style="font: 16px system-ui; max-width: 40em; margin: 3em auto"><h1>forkpool</h1>
<p>This page needs the server's token. Open the link <code>forkpool serve</code> printed when it started
(<code>/login?token=…</code>), or start the server with <code>FORKPOOL_SERVER_TOKEN</code> set and open
<code>/login?token=&lt;that token&gt;</code>.</p></body></html>`;
