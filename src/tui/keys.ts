/**
 * Raw terminal input to the chat's keys. Ink's own key object has no Ctrl+Enter and no F keys,
 * so the chat reads each keypress's raw sequence (ink splits a chunk into keypresses) here.
 *
 * Ctrl+Enter reaches a program in one of three shapes: the kitty keyboard protocol's
 * `CSI 13;5u`, xterm's modifyOtherKeys `CSI 27;5;13~`, or, in a terminal without extended key
 * reporting, nothing distinguishable from Enter at all. Ctrl+J (a bare line feed, which some
 * terminals also send for Ctrl+Enter) is the fallback that works everywhere (the seed's reason).
 */
export type ChatKey =
  | { type: 'enter' }
  | { type: 'ctrl-enter' }
  | { type: 'escape' }
  | { type: 'ctrl-c' }
  | { type: 'up' }
  | { type: 'down' }
  | { type: 'page-up' }
  | { type: 'page-down' }
  | { type: 'f3' }
  | { type: 'backspace' }
  | { type: 'clear-line' }
  | { type: 'text'; text: string }
  /** An SGR mouse event (mouse.ts): `button` 0 left, 64/65 wheel up/down; 1-based column and row. */
  | { type: 'mouse'; button: number; x: number; y: number; release: boolean }
  /** The terminal's answer to a cursor position query (mouse.ts), 1-based. */
  | { type: 'cursor'; row: number; column: number }
  | { type: 'ignored' };

const CTRL_ENTER = new Set(['\n', '\x1b[13;5u', '\x1b[27;5;13~', '\x1b[13;5~']);
const F3 = new Set(['\x1bOR', '\x1b[13~', '\x1b[[C', '\x1b[1;1R', '\x1b[R']);
const SIMPLE: Record<string, ChatKey['type']> = {
  '\r': 'enter',
  '\x1b[13u': 'enter',
  '\x1b': 'escape',
  '\x1b\x1b': 'escape',
  '\x1b[27u': 'escape',
  '\x03': 'ctrl-c',
  '\x1b[99;5u': 'ctrl-c',
  '\x1b[A': 'up',
  '\x1bOA': 'up',
  '\x1b[B': 'down',
  '\x1bOB': 'down',
  '\x1b[5~': 'page-up',
  '\x1b[6~': 'page-down',
  '\x7f': 'backspace',
  '\b': 'backspace',
  '\x1b[127u': 'backspace',
  '\x15': 'clear-line',
};

/** One keypress (or one pasted chunk) as the chat sees it. */
export function parseKey(raw: string): ChatKey {
  if (CTRL_ENTER.has(raw)) return { type: 'ctrl-enter' };
  if (F3.has(raw)) return { type: 'f3' };
  const simple = SIMPLE[raw];
  if (simple) return { type: simple } as ChatKey;
  const mouse = /^\x1b\[<(\d+);(\d+);(\d+)([Mm])$/.exec(raw);
  // Shift, Alt and Ctrl add 4, 8 and 16 to the button: the same click or wheel step.
  if (mouse) return { type: 'mouse', button: Number(mouse[1]) & ~28, x: Number(mouse[2]), y: Number(mouse[3]), release: mouse[4] === 'm' };
  const cursor = /^\x1b\[(\d+);(\d+)R$/.exec(raw);
  if (cursor) return { type: 'cursor', row: Number(cursor[1]), column: Number(cursor[2]) };
  // Any other escape sequence or control character is not text.
  if (raw.startsWith('\x1b')) return { type: 'ignored' };
  const text = raw.replace(/[\u0000-\u001f\u007f-\u009f]/g, '');
  return text ? { type: 'text', text } : { type: 'ignored' };
}

/**
 * The keys in one chunk of input. Keys typed ahead (or sent by a script) can arrive together
 * with text in one chunk, e.g. `hello\r`: a carriage return in it is still Enter, a line feed
 * still Ctrl+J, so nothing typed is lost or turned into a space.
 */
export function parseKeys(raw: string): ChatKey[] {
  if (raw.length <= 1 || raw.startsWith('\x1b') || !/[\r\n]/.test(raw)) return [parseKey(raw)];
  return raw
    .split(/(\r\n|\r|\n)/)
    .filter((part) => part !== '')
    .map((part) => (part === '\n' ? parseKey('\n') : part === '\r' || part === '\r\n' ? parseKey('\r') : parseKey(part)));
}
