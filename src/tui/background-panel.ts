/**
 * The background panel (F3): the job list (a window of {@link PANEL_ROWS} rows around the
 * selection) or one job's detail, each with a scrollbar thumb on the right when it holds more
 * than it shows, and the mouse: a click on a row selects it (a click on the selected row opens
 * its detail), the wheel scrolls. See mouse.ts for how a click finds its row.
 */
import { createElement as h, createRef, useMemo, type ReactElement, type RefObject } from 'react';
import { Box, Text, measureElement, type DOMElement } from 'ink';
import type { ChatController } from './controller.js';
import type { ChatKey } from './keys.js';
import { detailLines, panelRow, transcriptDetailLines, treeOrder } from './jobs-view.js';
import { CURSOR_QUERY, frameRowAt } from './mouse.js';
import { clipboardSequence, dragRange, isDrag, sliceChars, type Gesture, type RowSelection } from './panel-selection.js';
import { jobColor } from './state-colors.js';

/** Rows of the job list shown at once; the rest scrolls. */
export const PANEL_ROWS = 8;
/** Rows one wheel step scrolls. */
const WHEEL_STEP = 3;

/**
 * The scrollbar beside `visible` rows of `total`, the first shown being `offset`: one character
 * a row, the thumb (`┃`) sized and placed in proportion on the track (`│`); none when all fit.
 */
export function scrollThumb(total: number, visible: number, offset: number): string[] {
  if (visible <= 0 || total <= visible) return [];
  const size = Math.max(1, Math.round((visible * visible) / total));
  const maxOffset = total - visible;
  const start = Math.round((Math.min(Math.max(0, offset), maxOffset) / maxOffset) * (visible - size));
  return Array.from({ length: visible }, (_, i) => (i >= start && i < start + size ? '┃' : '│'));
}

/** The list window: the first row shown, so the selection stays near the middle. */
export function listWindow(selected: number, total: number): { at: number; start: number } {
  const at = Math.min(selected, Math.max(0, total - 1));
  return { at, start: Math.max(0, Math.min(at - Math.floor(PANEL_ROWS / 2), total - PANEL_ROWS)) };
}

/** What the mouse needs of the last render: the frame's root and the list rows' box; and the text a drag selected. */
export interface PanelLayout {
  root: RefObject<DOMElement | null>;
  rows: RefObject<DOMElement | null>;
  /** Part of one row's text selected by a drag (panel-selection.ts), shown highlighted until the next press. */
  selection?: RowSelection | undefined;
}

/** One layout object for the app's life: the mouse handler made from it keeps its pending click across renders. */
export function usePanelLayout(): PanelLayout {
  return useMemo(() => ({ root: createRef<DOMElement>(), rows: createRef<DOMElement>() }), []);
}

/** A list row's text, with the part a drag selected highlighted. */
function rowText(text: string, selection: RowSelection | undefined): Array<string | ReactElement> {
  if (!selection) return [text];
  return [
    sliceChars(text, 0, selection.from),
    h(Text, { key: 'selected', backgroundColor: 'yellow', color: 'black' }, sliceChars(text, selection.from, selection.to)),
    sliceChars(text, selection.to, Infinity),
  ];
}

export function BackgroundPanel({
  chat,
  jobs,
  now,
  height,
  rowsRef,
  selection,
}: {
  chat: ChatController;
  jobs: ReturnType<ChatController['jobs']>;
  now: number;
  height: number;
  rowsRef: RefObject<DOMElement | null>;
  selection?: RowSelection | undefined;
}): ReactElement {
  const ordered = treeOrder(jobs);
  const { selected, detail, detailOffset } = chat.panel;
  const detailJob = detail !== undefined ? chat.session.manager.get(detail) : undefined;
  let title: string;
  let lines: ReactElement[];
  let thumb: string[];
  const before: ReactElement[] = [];
  const after: ReactElement[] = [];
  if (detailJob) {
    const all = [
      ...detailLines(detailJob, chat.session.activity.get(detailJob.id), now),
      ...transcriptDetailLines(chat.session.manager.transcript(detailJob.id)),
    ];
    const offset = Math.min(detailOffset, Math.max(0, all.length - height));
    title = `Background agent ${detailJob.id} (Esc: back to the list, PgUp/PgDn or the wheel scroll)${all.length > height ? ` · lines ${offset + 1}-${Math.min(all.length, offset + height)} of ${all.length}` : ''}`;
    lines = all.slice(offset, offset + height).map((line, i) => h(Text, { key: i, wrap: 'truncate-end' }, line));
    thumb = scrollThumb(all.length, Math.min(height, all.length), offset);
  } else {
    const { at, start } = listWindow(selected, ordered.length);
    const visible = ordered.slice(start, start + PANEL_ROWS);
    title = `Background agents · ${ordered.length} job${ordered.length === 1 ? '' : 's'} (F3 hides, ↑↓ or click select, Enter detail)`;
    lines = visible.map((job, i) =>
      h(
        Text,
        { key: job.id, inverse: start + i === at, color: jobColor(job), wrap: 'truncate-end' },
        ...rowText(panelRow(job, chat.session.activity.get(job.id), now), selection?.jobId === job.id ? selection : undefined),
      ),
    );
    thumb = scrollThumb(ordered.length, visible.length, start);
    if (ordered.length === 0) lines.push(h(Text, { key: 'none', dimColor: true }, 'no background jobs yet'));
    if (start > 0) before.push(h(Text, { key: 'up', dimColor: true }, `↑ ${start} more`));
    if (start + PANEL_ROWS < ordered.length) after.push(h(Text, { key: 'down', dimColor: true }, `↓ ${ordered.length - start - PANEL_ROWS} more`));
  }
  const body = h(
    Box,
    { key: 'body', ref: rowsRef, flexDirection: 'row' },
    h(Box, { flexDirection: 'column', flexGrow: 1 }, ...lines),
    thumb.length > 0 ? h(Box, { flexDirection: 'column', width: 1, marginLeft: 1 }, ...thumb.map((c, i) => h(Text, { key: i, color: 'blue' }, c))) : null,
  );
  return h(Box, { flexDirection: 'column', borderStyle: 'round', borderColor: 'blue', paddingX: 1 }, h(Text, { bold: true }, title), ...before, body, ...after);
}

/**
 * The panel's mouse: the wheel scrolls (the list's selection, or the detail). A left press asks
 * the terminal where the cursor is, and its answer places the frame, so the press finds its row;
 * on release, a press that did not move is a click (select the row; on the selected row, open
 * it), and a drag along the row selects that part of its text and copies it (panel-selection.ts).
 */
export function createPanelMouse(
  chat: ChatController,
  layout: PanelLayout,
  terminal: { write(text: string): unknown; rows(): number },
): { awaitingCursor: () => boolean; onKey: (key: Extract<ChatKey, { type: 'mouse' | 'cursor' }>) => void } {
  // The press being followed: the release and the cursor's answer may come in either order.
  let gesture: (Gesture & { released: boolean; cursorRow?: number }) | undefined;
  const awaitingCursor = () => gesture !== undefined && gesture.cursorRow === undefined;
  const finish = (): void => {
    const done = gesture;
    if (!done?.released || done.cursorRow === undefined) return;
    gesture = undefined;
    const root = layout.root.current;
    const rows = layout.rows.current;
    if (!root || !rows || !chat.panel.open || chat.panel.detail !== undefined) return;
    const frameRow = frameRowAt(done.press.y, { cursorRow: done.cursorRow, frameHeight: measureElement(root).height, terminalRows: terminal.rows() });
    if (frameRow === undefined) return;
    const box = measureElement(rows);
    const ordered = treeOrder(chat.jobs());
    const { at, start } = listWindow(chat.panel.selected, ordered.length);
    const index = start + (frameRow - box.y);
    const job = ordered[index];
    if (frameRow < box.y || frameRow >= box.y + box.height || !job) return;
    if (isDrag(done)) return select(job, done, box.x + 1);
    if (index === at) return chat.showDetail(job.id);
    chat.movePanel(index - chat.panel.selected, ordered.length);
  };
  // `textColumn`: the terminal column of the row text's first character (the frame starts at column 1).
  const select = (job: ReturnType<ChatController['jobs']>[number], drag: Gesture, textColumn: number): void => {
    const text = panelRow(job, chat.session.activity.get(job.id), chat.now());
    const range = dragRange(drag, textColumn, Array.from(text).length);
    if (!range) return;
    const selected = sliceChars(text, range.from, range.to);
    layout.selection = { jobId: job.id, ...range };
    terminal.write(clipboardSequence(selected));
    // The hint redraws the frame (with the highlight) and says what was copied.
    const count = Array.from(selected).length;
    chat.setHint(`copied ${count} character${count === 1 ? '' : 's'}: ${selected}`);
  };
  const onKey = (key: Extract<ChatKey, { type: 'mouse' | 'cursor' }>): void => {
    const panel = chat.panel;
    if (key.type === 'mouse') {
      if (!panel.open) return;
      if (!key.release && (key.button === 64 || key.button === 65)) return chat.movePanel(key.button === 64 ? -WHEEL_STEP : WHEEL_STEP, chat.jobs().length);
      // Motion with the left button held (32): the drag goes on.
      if (key.button === 32) {
        if (gesture && !gesture.released) gesture.dragX = key.x;
        return;
      }
      if (key.button !== 0 || panel.detail !== undefined) return;
      if (key.release) {
        if (!gesture || gesture.released) return;
        gesture.released = true;
        return finish();
      }
      // A new press: the old selection goes.
      layout.selection = undefined;
      gesture = { press: { x: key.x, y: key.y }, released: false };
      terminal.write(CURSOR_QUERY);
      return;
    }
    if (!gesture || gesture.cursorRow !== undefined) return;
    gesture.cursorRow = key.row;
    finish();
  };
  return { awaitingCursor, onKey };
}
