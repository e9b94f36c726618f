/**
 * Click-drag selection of a row's text in the background panel (issue 38, A31; the seed's panel
 * "text click-drag selection"): the terminal reports the press, the motion while the button is
 * held (mode 1002, mouse.ts) and the release. A drag inside one row selects the characters
 * between the press and where the button was let go (inclusive), the panel shows them
 * highlighted, and they are copied: to the terminal's clipboard by OSC 52 (tmux keeps them as a
 * paste buffer with `set-clipboard on`), and said in the hint line. A press and release in one
 * place stays a click (select the row, or open it).
 */

/** The selected part of one row: its job, and the character range `[from, to)` of the row's text. */
export interface RowSelection {
  jobId: string;
  from: number;
  to: number;
}

/** One press of the left button until its release: where it went down, where the drag reached. */
export interface Gesture {
  press: { x: number; y: number };
  /** The column the drag reached (motion with the button held); undefined while it did not move. */
  dragX?: number;
}

/** True when the gesture is a drag (it ended in another column), not a click. */
export function isDrag(gesture: Gesture): boolean {
  return gesture.dragX !== undefined && gesture.dragX !== gesture.press.x;
}

/**
 * The range of a row's text a drag covers: `textColumn` is the 1-based terminal column of the
 * row text's first character; both ends are included, clamped to the text. Undefined when the
 * drag lies wholly outside the text.
 */
export function dragRange(gesture: Gesture, textColumn: number, textLength: number): { from: number; to: number } | undefined {
  const a = gesture.press.x - textColumn;
  const b = (gesture.dragX ?? gesture.press.x) - textColumn;
  const from = Math.max(0, Math.min(a, b));
  const to = Math.min(textLength, Math.max(a, b) + 1);
  return from < to ? { from, to } : undefined;
}

/** Characters, not UTF-16 units: a row's symbols (●, ✓) are one column and one character each. */
export function sliceChars(text: string, from: number, to: number): string {
  return Array.from(text).slice(from, to).join('');
}

/** OSC 52: asks the terminal to put `text` on its clipboard (`c`). */
export function clipboardSequence(text: string): string {
  return `\x1b]52;c;${Buffer.from(text, 'utf8').toString('base64')}\x07`;
}
