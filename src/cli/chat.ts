/**
 * `forkpool chat` (and bare `forkpool` on a terminal): a conversation with the parent agent over
 * many turns while background jobs come and go. On a terminal, the ink app; otherwise plain lines.
 */
import { AgentSession } from '../main/session/agent-session.js';
import { loadOptional } from '../main/executors/optional-package.js';
import { ChatController } from '../tui/controller.js';
import { runLineMode } from '../tui/line-mode.js';
import { enableMouse } from '../tui/mouse.js';
import { buildOrDispose, createCliContext, onTermination, type CliContext, type GlobalFlags } from './common.js';
import { EXIT, usageProblem } from './exit.js';
import { escapeForTerminal, preview, usageLines } from '../main/views/terminal-lines.js';
import { announceLedgerSession, undeliveredAtExit } from './run.js';

export interface ChatFlags extends GlobalFlags {
  /** A session id kept in `--ledger`: continue its conversation and its jobs. */
  resume?: string;
  /** A configured agent: what the person's own jobs (/bg start, Ctrl+Enter) run as. */
  agent?: string;
}

/** How long quitting waits for jobs to stop before hard-stopping their threads. */
const QUIT_TIMEOUT_MAX_MS = 5_000;

/**
 * The session and its controller. The one place a chat's session is made: resuming a recorded
 * session (`chat --resume <id>`, with the durable ledger) belongs here.
 */
export function createChat(ctx: CliContext, options: { resume?: string | undefined; onTerminal?: boolean; agent?: string | undefined } = {}): ChatController {
  const { resume } = options;
  let chat: ChatController | undefined;
  const session = new AgentSession({
    config: ctx.config,
    logger: ctx.logger,
    // A gated tool in the parent asks in the chat (permissionMode "ask" or --ask); jobs never ask.
    ...(ctx.config.permissionMode === 'ask' ? { asker: (request) => (chat ? chat.askPermission(request) : Promise.resolve('deny' as const)) } : {}),
    ...(resume !== undefined ? { sessionId: resume, resume: true } : {}),
  });
  chat = new ChatController({
    session,
    closeTimeoutMs: Math.min(ctx.config.background.closeTimeoutMs, QUIT_TIMEOUT_MAX_MS),
    userAgent: options.agent,
    // Only a terminal can be asked: piped stdin is the command stream (agent-choice.ts).
    askAgent: options.onTerminal ?? false,
  });
  const model = ctx.sim
    ? `the simulated model (${ctx.sim.url})`
    : `${escapeForTerminal(ctx.config.model)} at ${escapeForTerminal(ctx.config.baseUrl ?? 'the default endpoint')}`;
  chat.add('info', `forkpool chat · ${model} · workspace ${escapeForTerminal(ctx.config.workspaceRoot)} · /help for commands, Ctrl+C on an empty prompt quits`);
  // On a terminal into the transcript (the ink app owns the screen); otherwise on stderr, like `run`.
  const say = options.onTerminal ? (line: string) => chat?.add('info', escapeForTerminal(line)) : ctx.note;
  announceLedgerSession(ctx, session, 'chat', resume !== undefined, say);
  if (options.agent !== undefined) say(`your background jobs (/bg start, Ctrl+Enter) run as agent ${options.agent} (--agent)`);
  return chat;
}

export async function chatCommand(flags: ChatFlags): Promise<number> {
  const ctx = await createCliContext(flags);
  const interactive = Boolean(process.stdin.isTTY && process.stdout.isTTY && !ctx.json);
  if (flags.agent !== undefined && !Object.hasOwn(ctx.config.agents, flags.agent)) {
    const known = Object.keys(ctx.config.agents);
    await ctx.dispose();
    return usageProblem(
      'chat',
      `--agent expects one of the configured agents (${known.length ? known.join(', ') : 'none is configured'}); received ${preview(flags.agent)}`,
    );
  }
  const chat = await buildOrDispose(ctx, () => createChat(ctx, { resume: flags.resume, onTerminal: interactive, agent: flags.agent }));
  // MCP servers connect before the first line is read, so a job started at once is offered their tools (a failure is the manager's to report).
  await chat.session.manager.tools.start().catch(() => {});
  const stopSignals = onTermination(async () => {
    await chat.quit();
    await ctx.dispose();
  });
  try {
    if (interactive) await runInk(chat);
    else
      await runLineMode(chat, {
        input: process.stdin,
        out: (line) => process.stdout.write(`${line}\n`),
        note: ctx.note,
        ...(ctx.json ? { json: (entry) => ctx.event('entry', { kind: entry.kind, text: entry.text }) } : {}),
      });
    const usage = chat.session.agent.session.usage();
    ctx.event('usage', { byBucket: usage });
    const lines = usageLines(usage);
    if (lines.length > 0 && !ctx.json) process.stderr.write(`tokens:\n${lines.join('\n')}\n`);
    // Never exit 0 over a result the parent never got (the ledger could not record its delivery).
    // quit() has run (every way out of the chat closes it): its report names the jobs it stopped.
    return undeliveredAtExit(ctx, chat.session, await chat.quit(), 'chat') > 0 ? EXIT.failure : EXIT.ok;
  } finally {
    stopSignals();
    await ctx.dispose();
  }
}

/** Runs the ink app until the chat has closed its session (Ctrl+C when idle, /quit, a signal). */
async function runInk(chat: ChatController): Promise<void> {
  // Loaded only on a terminal: the line mode never needs ink or React (optional peers).
  const [{ render }, { createElement }, { ChatApp }] = await loadOptional('forkpool chat on a terminal', ['ink', 'react'], () =>
    Promise.all([import('ink'), import('react'), import('../tui/app.js')]),
  );
  // Clicks and the wheel reach the background panel only while the app runs (mouse.ts).
  const mouseOff = enableMouse(process.stdout);
  try {
    await renderUntilClosed(render, createElement, ChatApp, chat);
  } finally {
    mouseOff();
  }
}

async function renderUntilClosed(
  render: typeof import('ink').render,
  createElement: typeof import('react').createElement,
  ChatApp: typeof import('../tui/app.js').ChatApp,
  chat: ChatController,
): Promise<void> {
  let rendered = 0;
  let onRendered = () => {};
  const app = render(
    createElement(ChatApp, {
      chat,
      onRendered: (entries) => {
        rendered = entries;
        onRendered();
      },
    }),
    { exitOnCtrlC: false, patchConsole: true },
  );
  // quit() may come from a key, a command or a signal: wait for whichever comes first.
  await new Promise<void>((resolve) => {
    const check = () => {
      if (!chat.closing) return;
      stop();
      void chat.quit().then(() => resolve());
    };
    const stop = chat.on('change', check);
    check();
  });
  // The close report is the last entry: unmount once a render holds it (unmount flushes it out).
  await new Promise<void>((resolve) => {
    onRendered = () => rendered >= chat.entries.length && resolve();
    onRendered();
    chat.changed();
  });
  app.unmount();
  await app.waitUntilExit();
}
