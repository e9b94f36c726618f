/**
 * forkpool's routes mounted as a Fastify plugin in an app of the embedder's own, under a prefix:
 * its API and page work there with the token, its token check and error format do not touch the
 * app's own routes, and closing the app closes the jobs (a long poll in flight ends, nothing is
 * left running).
 */
import Fastify from 'fastify';
import { describe, expect, it } from 'vitest';
import { forkpoolRoutes, type ServerState } from '../../src/server/index.js';
import { useCleanup } from '../helpers/cleanup.js';
import { configError } from '../helpers/config.js';
import { startTestSim } from '../helpers/sim.js';
import { TOKEN } from '../helpers/server.js';

const cleanup = useCleanup();

describe('forkpoolRoutes in an app of your own', () => {
  it('serves the API and page under its prefix, leaves the app’s routes alone, and closes with the app', async () => {
    const { config } = await startTestSim(cleanup, { latencyMs: 20 });
    const app = Fastify();
    app.get('/health', async () => ({ mine: true }));
    let state: ServerState | undefined;
    await app.register(forkpoolRoutes, { config, token: TOKEN, prefix: '/forkpool', onState: (s) => (state = s) });
    await app.listen({ host: '127.0.0.1', port: 0 });
    let closed = false;
    cleanup.add(() => (closed ? undefined : app.close()));
    const address = app.server.address();
    const base = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;
    const auth = { authorization: `Bearer ${TOKEN}` };

    // The app's own route: no token needed, not forkpool's error format.
    expect(await (await fetch(`${base}/health`)).json()).toEqual({ mine: true });
    expect((await fetch(`${base}/elsewhere`)).status).toBe(404);
    // forkpool's: the token is needed under the prefix, and only there.
    expect((await fetch(`${base}/forkpool/v1/jobs`)).status).toBe(401);
    const started = await fetch(`${base}/forkpool/v1/jobs`, {
      method: 'POST',
      headers: { ...auth, 'content-type': 'application/json' },
      body: JSON.stringify({ task: 'Where is the retry backoff implemented?', label: 'embedded' }),
    });
    expect(started.status).toBe(202);
    const result = await fetch(`${base}/forkpool/v1/jobs/bg-1/result?wait=60`, { headers: auth });
    expect(await result.json()).toMatchObject({ id: 'bg-1', state: 'ended' });
    expect(await (await fetch(`${base}/forkpool/v1/nope`, { headers: auth })).json()).toMatchObject({ error: { code: 'NOT_FOUND' } });

    // The page knows where it is mounted: its assets and its API calls go under the prefix.
    const page = await (await fetch(`${base}/forkpool/`, { headers: auth })).text();
    expect(page).toContain('data-base="/forkpool"');
    expect(page).toContain('src="/forkpool/page.js"');
    expect((await fetch(`${base}/forkpool/page.js`, { headers: auth })).status).toBe(200);
    const login = await fetch(`${base}/forkpool/login?token=${TOKEN}`, { redirect: 'manual' });
    expect(login.headers.get('location')).toBe('/forkpool/');
    expect(login.headers.get('set-cookie')).toContain('Path=/forkpool');

    // A long poll in flight does not hold the close up; the app's close closes the jobs.
    await fetch(`${base}/forkpool/v1/jobs`, {
      method: 'POST',
      headers: { ...auth, 'content-type': 'application/json' },
      body: JSON.stringify({ task: 'Where is the LruCache class?', label: 'left running' }),
    });
    const poll = fetch(`${base}/forkpool/v1/jobs/bg-2/result?wait=60`, { headers: auth }).then(
      (r) => r.status,
      () => 'cut',
    );
    await app.close();
    closed = true;
    expect(await poll).toBeDefined();
    expect(state?.manager.jobs().every((job) => job.state === 'ended')).toBe(true);
  }, 60_000);

  it('needs a token, of the length forkpool serve asks for', async () => {
    const { config } = await startTestSim(cleanup, { latencyMs: 20 });
    for (const token of [undefined, 'short']) {
      const app = Fastify();
      const error = await app
        .register(forkpoolRoutes, { config, token: token as string })
        .ready()
        .then(
          () => undefined,
          (e: unknown) => e,
        );
      await app.close();
      expect(
        configError(() => {
          throw error;
        }).issues[0]?.field,
      ).toBe('token');
    }
  });
});
