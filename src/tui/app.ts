/**
 * The chat's ink app: the final transcript in `<Static>` (written once, never redrawn, so it
 * does not flicker while jobs update), then the live part: the turn's activity, the background
 * panel, a permission question, the hint, the status bar and the input line.
 */
import type { EventEmitter } from 'node:events';
import { createElement as h, useCallback, useEffect, useLayoutEffect, useMemo, useReducer, useRef, useState, type ReactElement } from 'react';
import { Box, Static, Text, useStdin, useStdout } from 'ink';
import type { ChatController } from './controller.js';
import { parseKey, parseKeys, type ChatKey } from './keys.js';
import { interceptTerminalReplies } from './mouse.js';
import { countText, poolText, treeOrder, usageText, wavesText } from './jobs-view.js';
import { BackgroundPanel, createPanelMouse, usePanelLayout, type PanelLayout } from './background-panel.js';
import type { EntryKind, TranscriptEntry } from './transcript.js';
import { STATE_COLOR } from './state-colors.js';
import { approvalPromptLines } from './approve-command.js';

const ENTRY_COLOR: Partial<Record<EntryKind, string>> = {
  info: 'gray',
  user: 'cyan',
  tool: 'gray',
  job: 'blue',
  delivered: 'magenta',
  alert: 'yellow',
  notice: 'yellow',
  error: 'red',
};

/** `onRendered`: after each commit, how many transcript entries it holds (the CLI waits for the last before it unmounts). */
export function ChatApp({ chat, onRendered }: { chat: ChatController; onRendered?: (entries: number) => void }): ReactElement {
  const [, redraw] = useReducer((n: number) => n + 1, 0);
  const entryCount = chat.entries.length;
  useLayoutEffect(() => onRendered?.(entryCount));
  // ink 8 types stdout as a plain WritableStream; a terminal's is a tty.WriteStream (or a test's stand-in).
  const stdout = useStdout().stdout as NodeJS.WriteStream;
  const [columns, setColumns] = useState(stdout.columns || 100);
  const [terminalRows, setTerminalRows] = useState(stdout.rows || 40);
  useEffect(() => chat.on('change', redraw), [chat]);
  useEffect(() => {
    const onResize = () => {
      setColumns(stdout.columns || 100);
      setTerminalRows(stdout.rows || 40);
    };
    stdout.on('resize', onResize);
    return () => void stdout.off('resize', onResize);
  }, [stdout]);
  // Elapsed times move while anything runs.
  const live = chat.liveJobs() > 0 || chat.busy;
  useEffect(() => {
    if (!live) return;
    const timer = setInterval(redraw, 1_000);
    return () => clearInterval(timer);
  }, [live]);

  const layout = usePanelLayout();
  const input = useChatInput(chat, layout, stdout);
  const jobs = chat.jobs();
  const now = chat.now();
  const approvals = chat.session.manager.approvals();
  return h(
    Box,
    { ref: layout.root, flexDirection: 'column', width: columns },
    h(Static<TranscriptEntry>, {
      // A new array each render: Static memoises on the array, and the controller appends in place.
      items: chat.entries.slice(),
      children: (entry) => h(Text, { key: entry.id, wrap: 'wrap', ...colorOf(entry) }, entry.text),
    }),
    chat.busy
      ? h(Text, { color: 'green' }, `◐ ${chat.turn !== undefined ? `turn ${chat.turn}` : 'starting'} · ${chat.activity ?? 'working'} (Esc cancels the turn)`)
      : null,
    chat.panel.open ? h(BackgroundPanel, { chat, jobs, now, height: Math.max(5, terminalRows - 12), rowsRef: layout.rows, selection: layout.selection }) : null,
    chat.permission
      ? h(
          Box,
          { borderStyle: 'round', borderColor: 'yellow', paddingX: 1 },
          h(Text, null, `Allow ${chat.permission.tool}: ${chat.permission.summary}?  [y] once · [a] always · [n] deny`),
        )
      : null,
    approvals.length > 0
      ? h(
          Box,
          { borderStyle: 'round', borderColor: 'yellow', paddingX: 1, flexDirection: 'column' },
          h(
            Text,
            { color: 'yellow' },
            `⏸ ${approvals.length} background tool call${approvals.length === 1 ? '' : 's'} wait${approvals.length === 1 ? 's' : ''} for your answer`,
          ),
          ...approvalPromptLines(approvals).map((line, i) => h(Text, { key: i }, line)),
        )
      : null,
    chat.agentQuestion ? h(Box, { borderStyle: 'round', borderColor: 'cyan', paddingX: 1 }, h(Text, null, chat.agentQuestion)) : null,
    chat.hint ? h(Text, { color: 'yellow' }, chat.hint) : null,
    h(StatusBar, { chat, jobs }),
    h(
      Box,
      null,
      h(Text, { color: chat.busy ? 'gray' : 'cyan' }, chat.closing ? '✕ ' : '› '),
      input.text
        ? h(Text, null, input.text)
        : h(Text, { dimColor: true }, chat.busy ? 'model busy: /bg …, Ctrl+Enter or Ctrl+J for a background job' : 'ask something, or /help'),
      h(Text, { inverse: true }, ' '),
    ),
  );
}

function StatusBar({ chat, jobs }: { chat: ChatController; jobs: ReturnType<ChatController['jobs']> }): ReactElement {
  const parts = [countText(jobs)];
  if (chat.alertsWaiting > 0) parts.push(`⚠ ${chat.alertsWaiting} alert${chat.alertsWaiting === 1 ? '' : 's'} waiting`);
  const waves = wavesText(jobs);
  if (waves) parts.push(waves);
  parts.push(usageText(chat.session.agent.session.usage(), chat.session.agent.config));
  const pool = poolText(chat.session.manager.budgetPool());
  if (pool) parts.push(pool);
  return h(
    Box,
    { borderStyle: 'single', borderTop: true, borderBottom: false, borderLeft: false, borderRight: false, borderColor: 'gray' },
    h(Text, null, parts.join('  │  ')),
  );
}

/** The input line and every key: Enter/Ctrl+Enter rules live in the controller, editing here. */
function useChatInput(chat: ChatController, layout: PanelLayout, stdout: NodeJS.WriteStream): { text: string } {
  const [text, setText] = useState('');
  // The handler reads the latest text and history step without re-subscribing on each key.
  const state = useRef({ text: '', back: 0 });
  // Raw input chunks, not useInput's parsed keys: keys.ts reads sequences useInput drops (Ctrl+Enter
  // as CSI u or modifyOtherKeys, pastes). ink 8 no longer types the emitter on useStdin's value,
  // but the hook still returns the whole stdin context (it is how useInput itself listens).
  const {
    internal_eventEmitter: events,
    setRawMode,
    isRawModeSupported,
    stdin,
  } = useStdin() as ReturnType<typeof useStdin> & { internal_eventEmitter: EventEmitter };
  const update = useCallback(
    (next: string, back = 0) => {
      state.current = { text: next, back };
      setText(next);
      chat.inputChanged(next);
    },
    [chat],
  );

  const panelMouse = useMemo(
    () => createPanelMouse(chat, layout, { write: (text) => stdout.write(text), rows: () => stdout.rows || 40 }),
    [chat, layout, stdout],
  );
  const onKey = useCallback(
    (key: ChatKey) => {
      const current = state.current.text;
      if (chat.permission) {
        if (key.type === 'text' && /^[ya]$/i.test(key.text)) chat.answerPermission(key.text.toLowerCase() === 'a' ? 'always' : 'once');
        else if ((key.type === 'text' && /^n$/i.test(key.text)) || key.type === 'escape') chat.answerPermission('deny');
        else if (key.type === 'ctrl-c') chat.interrupt();
        return;
      }
      if (chat.agentQuestion) {
        if (key.type === 'text' && /^[1-9]$/.test(key.text)) chat.answerAgent(Number(key.text));
        else if (key.type === 'escape') chat.answerAgent(undefined);
        else if (key.type === 'ctrl-c') chat.interrupt();
        return;
      }
      const panel = chat.panel;
      const panelNavigates = panel.open && current === '';
      switch (key.type) {
        case 'ctrl-c':
          chat.interrupt();
          return;
        case 'escape':
          if (panel.detail !== undefined) chat.showDetail(undefined);
          else if (chat.busy || chat.waiting) chat.cancelTurn();
          else if (panel.open) chat.togglePanel();
          else chat.setHint(undefined);
          return;
        case 'f3':
          chat.togglePanel();
          return;
        case 'up':
        case 'down': {
          const delta = key.type === 'up' ? -1 : 1;
          if (panelNavigates) return chat.movePanel(delta, chat.jobs().length);
          const back = Math.min(chat.history.length, Math.max(0, state.current.back - delta));
          update(chat.recall(back), back);
          return;
        }
        case 'page-up':
        case 'page-down':
          if (panel.open) chat.movePanel(key.type === 'page-up' ? -10 : 10, chat.jobs().length);
          return;
        case 'enter': {
          if (panelNavigates && panel.detail === undefined) {
            const job = treeOrder(chat.jobs())[Math.min(panel.selected, chat.jobs().length - 1)];
            if (job) chat.showDetail(job.id);
            return;
          }
          if (chat.submitLine(current).accepted) update('');
          return;
        }
        case 'ctrl-enter':
          if (chat.spawnFromInput(current).accepted) update('');
          return;
        case 'backspace':
          update(Array.from(current).slice(0, -1).join(''), state.current.back);
          return;
        case 'clear-line':
          update('');
          return;
        case 'text':
          if (chat.hint) chat.setHint(undefined);
          update(current + key.text, state.current.back);
          return;
        case 'ignored':
          return;
      }
    },
    [chat, update],
  );

  useEffect(() => {
    if (isRawModeSupported) setRawMode(true);
    const listener = (raw: string) => {
      for (const key of parseKeys(raw)) onKey(key);
    };
    events.on('input', listener);
    // Mouse events and cursor reports never reach ink's input event (mouse.ts): taken out before it.
    const stopIntercepting = interceptTerminalReplies(stdin, panelMouse.awaitingCursor, (raw) => {
      const key = parseKey(raw);
      if (key.type === 'mouse' || key.type === 'cursor') panelMouse.onKey(key);
    });
    return () => {
      stopIntercepting();
      events.off('input', listener);
      if (isRawModeSupported) setRawMode(false);
    };
  }, [events, onKey, setRawMode, isRawModeSupported, stdin, panelMouse]);
  return { text };
}

/** A job's line takes its state's colour (state-colors.ts); every other line its kind's. */
function colorOf(entry: TranscriptEntry): { color?: string } {
  const color = entry.jobState ? STATE_COLOR[entry.jobState] : ENTRY_COLOR[entry.kind];
  return color ? { color } : {};
}
