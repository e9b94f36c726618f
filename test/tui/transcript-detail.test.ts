/**
 * The chat's job detail (F3, Enter on a row) shows the job's transcript under its fields and
 * result: the ink app over a real AgentSession, the job in the real pool on a scripted
 * simulator. The steps are there in order, the model's escape sequence shown escaped, and the
 * key planted in a file the job read is not on screen.
 */
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { createElement } from 'react';
import { render } from 'ink-testing-library';
import { describe, expect, it } from 'vitest';
import { AgentSession } from '../../src/main/session/agent-session.js';
import { ChatApp } from '../../src/tui/app.js';
import { ChatController } from '../../src/tui/controller.js';
import { makeConfig, makeWorkspace, startSim, useCleanup, waitFor, watchManager } from '../helpers/index.js';

const cleanups = useCleanup();
const SAFETY_NET = { timeoutMs: 90_000 };
const SECRET = 'sk-tui-transcript-secret-0123456789';
const KEY = { enter: '\r', f3: '\x1bOR', pageDown: '\x1b[6~' } as const;

describe("chat app: a job's transcript in its detail", { timeout: 240_000 }, () => {
  it('Enter on a row shows the steps under the detail, escaped, without the key; PgDn scrolls to them', async () => {
    const root = await makeWorkspace(cleanups);
    writeFileSync(path.join(root, 'leak.txt'), `key=${SECRET}\n`);
    const sim = await startSim(cleanups, {
      script: [
        { content: 'Looking \u001b[2J here.', toolCalls: [{ name: 'grep', arguments: { pattern: 'LruCache' } }] },
        { toolCalls: [{ name: 'read_file', arguments: { path: 'leak.txt' } }] },
        { content: 'In src/cache.ts.' },
      ],
    });
    const session = new AgentSession({ config: makeConfig(sim, root, {}, { apiKey: SECRET }), closeExecutor: true });
    watchManager(session.manager);
    const chat = new ChatController({ session, closeTimeoutMs: 2_000 });
    const app = render(createElement(ChatApp, { chat }));
    cleanups.add(async () => {
      app.unmount();
      await session.close({ timeoutMs: 2_000 });
    });
    const frame = () => app.lastFrame() ?? '';
    app.stdin.write('/bg start Where is the LruCache class defined?');
    app.stdin.write(KEY.enter);
    await waitFor(() => session.manager.count('ended') === 1, 'the job ended', SAFETY_NET);
    const job = session.manager.jobs()[0]!;
    app.stdin.write(KEY.f3);
    await waitFor(() => frame().includes('Background agents · 1 job'), 'the panel', SAFETY_NET);
    app.stdin.write(KEY.enter);
    await waitFor(() => frame().includes(`Background agent ${job.id}`), 'the detail', SAFETY_NET);
    // Scrolled down to its end, page by page (the title says which lines show), keeping each frame.
    const seen: string[] = [frame()];
    for (let at = /lines (\d+)-(\d+) of (\d+)/.exec(frame()); at && at[2] !== at[3]; at = /lines (\d+)-(\d+) of (\d+)/.exec(frame())) {
      const shown = at[0];
      app.stdin.write(KEY.pageDown);
      await waitFor(() => !frame().includes(shown), 'the detail scrolled', SAFETY_NET);
      seen.push(frame());
    }
    const screen = seen.join('\n');
    expect(screen).toContain('transcript: 5 step(s)');
    const heads = [...new Set([...screen.matchAll(/#(\d) (model|tool \w+)/g)].map((m) => m[0]))];
    expect(heads).toEqual(['#1 model', '#2 tool grep', '#3 model', '#4 tool read_file', '#5 model']);
    expect(screen).toMatch(/#1 model .*→ grep \{"pattern":"LruCache"\}/);
    expect(screen).toContain('Looking \\u001b[2J here.');
    expect(screen).toContain('key=[REDACTED]');
    expect(screen).not.toContain(SECRET);
  });
});
