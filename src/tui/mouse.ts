/**
 * Mouse reporting for the chat's background panel: the terminal sends a click or a wheel step
 * as an SGR sequence (`ESC [ < button ; column ; row M`) only while reporting is on, and it stays
 * on after the program exits unless turned off. So it is on only while the ink app runs, and
 * turned off on every way out: unmount, a signal (the chat quits, then unmounts), an uncaught
 * error (`exit` still runs). A click needs the frame's place on the screen, which ink does not
 * know (the transcript scrolls above it): the chat asks the terminal where its cursor is (DSR,
 * `ESC [ 6 n`), which sits just below the frame.
 */

/**
 * Button events with motion while a button is held (1002: a drag in the panel selects text) in
 * SGR encoding (1006): coordinates past column 223. No motion without a button (1003).
 */
export const MOUSE_ON = '\x1b[?1002h\x1b[?1006h';
export const MOUSE_OFF = '\x1b[?1006l\x1b[?1002l';
/** Device status report: the terminal answers `ESC [ row ; column R`. */
export const CURSOR_QUERY = '\x1b[6n';

/** Turns reporting on; the returned function (idempotent) turns it off, and so does the process's exit. */
export function enableMouse(stream: { write(text: string): unknown }): () => void {
  stream.write(MOUSE_ON);
  let on = true;
  const off = () => {
    if (!on) return;
    on = false;
    process.off('exit', off);
    try {
      stream.write(MOUSE_OFF);
    } catch {
      // the terminal is gone: nothing to restore
    }
  };
  // A tty write is synchronous, so it is out before the process ends.
  process.once('exit', off);
  return off;
}

/** Where the live frame is: the cursor's row (1-based) as the terminal reported it, the frame's height and the terminal's rows. */
export interface FramePlace {
  cursorRow: number;
  frameHeight: number;
  terminalRows: number;
}

/**
 * The 0-based row within the frame that terminal row `y` (1-based) hits, or undefined above or
 * below it. ink writes the frame with a newline after it (the cursor is on the row below) unless
 * the frame fills the terminal (the cursor is on its last row).
 */
export function frameRowAt(y: number, place: FramePlace): number | undefined {
  const bottom = place.frameHeight >= place.terminalRows ? place.cursorRow : place.cursorRow - 1;
  const row = y - (bottom - place.frameHeight + 1);
  return row >= 0 && row < place.frameHeight ? row : undefined;
}

const MOUSE_EVENT = /\x1b\[<\d+;\d+;\d+[Mm]/g;
const MOUSE_OR_CURSOR = /\x1b\[<\d+;\d+;\d+[Mm]|\x1b\[\d+;\d+R/g;

/**
 * Takes mouse events (and, while `expectCursor()`, cursor reports) out of the input before ink
 * parses it, and hands them to `onReply` as raw sequences. ink 8 drops every terminal reply it has
 * no key for, mouse and cursor reports included, before any listener sees them; so the one read
 * of the stream ink makes is wrapped (its `read`), and undone by the returned function. A cursor
 * report is taken only while one is awaited: unasked, `ESC [ 1 ; 2 R` is Shift+F3.
 */
export function interceptTerminalReplies(
  stdin: { read: (size?: number) => string | Buffer | null },
  expectCursor: () => boolean,
  onReply: (sequence: string) => void,
): () => void {
  const read = stdin.read;
  const wrapped = (size?: number): string | Buffer | null => {
    const chunk = read.call(stdin, size);
    if (chunk === null) return chunk;
    const text = typeof chunk === 'string' ? chunk : chunk.toString('utf8');
    const pattern = expectCursor() ? MOUSE_OR_CURSOR : MOUSE_EVENT;
    if (!text.includes('\x1b[')) return chunk;
    const replies = text.match(pattern) ?? [];
    if (replies.length === 0) return chunk;
    for (const reply of replies) onReply(reply);
    return text.replace(pattern, '');
  };
  stdin.read = wrapped;
  return () => {
    if (stdin.read === wrapped) stdin.read = read;
  };
}
