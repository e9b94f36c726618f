/** `forkpool serve --ledger`: sessions and their conversations survive a server restart (docs/durability.md). */
import { describe, expect, it } from 'vitest';
import { useCleanup } from '../helpers/cleanup.js';
import { ledgerFile } from '../helpers/ledger.js';
import { startTestServer } from '../helpers/server.js';
import { textOf } from '../../src/sim/reply.js';

describe('serve with a durable ledger', () => {
  it('finds a session again after a restart, with its turns; new sessions get unused ids', async () => {
    const cleanup = useCleanup();
    const ledger = { path: ledgerFile(cleanup, 'server.db') };
    const first = await startTestServer(cleanup, { ledger });
    const created = (await (await first.api('/v1/sessions', { json: {} })).json()) as { id: string };
    const turn = await first.api(`/v1/sessions/${created.id}/messages`, { json: { input: 'Where is the tool loop?' } });
    expect(await turn.text()).toContain('"type":"result"');
    await first.server.close();

    const second = await startTestServer(cleanup, { ledger });
    const found = await second.api(`/v1/sessions/${created.id}`);
    expect(found.status).toBe(200);
    const session = second.server.state.sessions.get(created.id);
    expect(session?.agent.session.turns).toBe(1);
    expect(session?.agent.session.messages.some((m) => m.role === 'user' && textOf(m.content).includes('Where is the tool loop?'))).toBe(true);
    const fresh = (await (await second.api('/v1/sessions', { json: {} })).json()) as { id: string };
    expect(fresh.id).not.toBe(created.id);
    expect((await second.api('/v1/sessions/s-999')).status).toBe(404);
  }, 120_000);
});
