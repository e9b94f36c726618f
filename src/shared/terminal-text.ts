/**
 * Model and job text on its way to a terminal. A model chooses labels, answers, alerts and
 * error text; raw, an `ESC ]0;…` retitles the window, `ESC ]52;…` writes the clipboard, a
 * carriage return overwrites the line, a bidirectional override reorders what is shown. Every
 * place such text meets a terminal goes through one of these (the CLI's notes, `run`'s answer,
 * `--json` and fanout lines, the chat, the logger's pretty lines).
 */

/**
 * Characters that must not reach a terminal raw: C0/C1 controls (escape sequences, bells,
 * carriage returns), DEL, zero-width characters and bidirectional overrides and isolates
 * (U+200B–U+200F, U+202A–U+202E, U+2060–U+2069), line and paragraph separators, BOM.
 */
const UNSAFE_FOR_TERMINAL = /[\u0000-\u001f\u007f-\u009f\u200b-\u200f\u2028\u2029\u202a-\u202e\u2060-\u2069\ufeff]/g;
/** The same, but keeping line feeds and tabs (for multi-line text). */
const UNSAFE_IN_LINES = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u200b-\u200f\u2028\u2029\u202a-\u202e\u2060-\u2069\ufeff]/g;

function escapeChar(c: string): string {
  return `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`;
}

/** `text` with every control or invisible character shown as a `\uXXXX` escape (one line). */
export function escapeForTerminal(text: string): string {
  return text.replace(UNSAFE_FOR_TERMINAL, escapeChar);
}

/** Multi-line text (an answer): line feeds and tabs kept, CRLF made LF, everything else escaped. */
export function escapeLinesForTerminal(text: string): string {
  return text.replace(/\r\n/g, '\n').replace(UNSAFE_IN_LINES, escapeChar);
}

/**
 * `JSON.stringify(value)`, with the characters it leaves raw (DEL, C1 controls, U+2028/U+2029,
 * bidirectional controls) written as `\uXXXX` escapes too: the same JSON value, safe to print.
 * (They can only occur inside strings, where the escape means the same character.)
 */
export function jsonForTerminal(value: unknown): string {
  return (JSON.stringify(value) ?? 'null').replace(UNSAFE_FOR_TERMINAL, escapeChar);
}
