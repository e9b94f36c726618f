import type { RE2JS } from 're2js';
import { ToolError } from '../errors.js';

/**
 * grep's regular expressions run on re2js, a pure-JavaScript port of RE2: matching time grows
 * linearly with the input, whatever the pattern, so `(a+)+$` cannot stall a thread (V8's
 * backtracking engine took 76 s on 31 characters). The price is RE2's syntax: no backreferences
 * and no lookaround. JavaScript syntax is translated (`\u0041`, named groups); what RE2 cannot
 * express is refused with a message that says what to do instead.
 *
 * A pattern that is only literal text, or literal alternatives (`cancel|abort`, what models
 * send most), needs no RE2 machine: it runs on V8's own RegExp, which for a flat alternation of
 * literals (no group, quantifier, class or anchor) compares each alternative at each position
 * once, never backtracking into an earlier choice, so one call costs at most line length ×
 * pattern length, bounded per call as RE2's programs are. re2js is loaded only for other patterns.
 */

export interface LineMatcher {
  /** Index of the first match in `line`, or -1. */
  firstMatch(line: string): number;
  /**
   * Characters of a line that are matched; the rest of a longer line is not searched. Linear is
   * not cheap: one re2js call costs about (line length × program size), up to ~25 ns per unit
   * (a 64 KiB line against `\w{1000}Z|.{0,1000}Z` took 9 s in one call, and no deadline can
   * interrupt a call). So the matched part shrinks as the program grows, keeping one call
   * near {@link WORK_PER_CALL} units (a few hundred milliseconds at worst).
   */
  maxLineChars: number;
}

/** The longest pattern accepted (compiling one of 1,000 characters takes well under a second). */
export const MAX_PATTERN_CHARS = 1_000;
/** The largest compiled program (RE2 instructions) accepted. */
export const MAX_PROGRAM_SIZE = 8_000;
/** The most characters of a line ever matched (a simple pattern gets all of them). */
export const MAX_MATCH_LINE_CHARS = 64 * 1024;
/** Line characters × (program size + per-character overhead) one call may cost. */
const WORK_PER_CALL = 8_000_000;
const PER_CHAR_OVERHEAD = 32;

/** Features a backtracking engine has and RE2 refuses, detected to name them in the error. */
const UNSUPPORTED: ReadonlyArray<[RegExp, string]> = [
  [/\(\?<?[=!]/, 'lookahead/lookbehind ((?=…), (?!…), (?<=…), (?<!…))'],
  // An odd number of backslashes before the digit: `\\1` is a literal backslash and "1".
  [/(?:^|[^\\])(?:\\\\)*\\(?:[1-9]|k<)/, 'backreferences (\\1, \\k<name>)'],
];

export async function compileLinear(pattern: string, ignoreCase: boolean, toolName: string): Promise<LineMatcher> {
  if (pattern.length > MAX_PATTERN_CHARS) {
    throw new ToolError(
      'TOOL_ARGUMENTS_INVALID',
      toolName,
      `pattern: expected at most ${MAX_PATTERN_CHARS} characters; received ${pattern.length}. Search for a shorter pattern`,
    );
  }
  // JavaScript's own parser first: a plain syntax error is reported as such. Compiling (not
  // running) a RegExp is safe: it never backtracks.
  try {
    new RegExp(pattern, ignoreCase ? 'iu' : 'u');
  } catch (unicodeError) {
    try {
      new RegExp(pattern, ignoreCase ? 'i' : '');
    } catch {
      throw new ToolError('TOOL_ARGUMENTS_INVALID', toolName, `invalid regular expression ${JSON.stringify(pattern)}: ${messageOf(unicodeError)}`, {
        cause: unicodeError,
      });
    }
  }
  for (const [feature, name] of UNSUPPORTED) {
    if (feature.test(pattern)) throw unsupported(pattern, name, toolName);
  }
  const literals = literalAlternatives(pattern);
  if (literals) return literalMatcher(literals, ignoreCase, pattern.length);
  // ~260 KB, loaded on a thread's first pattern that needs it.
  const { RE2JS } = await import('re2js');
  let compiled: RE2JS;
  try {
    compiled = RE2JS.compile(RE2JS.translateRegExp(pattern), ignoreCase ? RE2JS.CASE_INSENSITIVE : 0);
  } catch (error) {
    throw unsupported(pattern, messageOf(error).replace(/^error parsing regexp: /, ''), toolName, error);
  }
  const size = compiled.programSize();
  if (size > MAX_PROGRAM_SIZE) {
    throw new ToolError(
      'TOOL_ARGUMENTS_INVALID',
      toolName,
      `pattern: expected a regular expression of at most ${MAX_PROGRAM_SIZE} compiled instructions; received ${JSON.stringify(pattern.slice(0, 80))}${pattern.length > 80 ? '…' : ''}, ` +
        `${size} instructions (large counted repeats such as {1000} cost one instruction per repeat). Use a simpler pattern`,
    );
  }
  return {
    maxLineChars: Math.min(MAX_MATCH_LINE_CHARS, Math.floor(WORK_PER_CALL / (size + PER_CHAR_OVERHEAD))),
    firstMatch(line) {
      // test() runs the DFA fast path; the position (a slower matcher) only for matching lines.
      if (!compiled.test(line)) return -1;
      const m = compiled.matcher(line);
      return m.find() ? m.start() : -1;
    },
  };
}

/** ASCII punctuation: escaped, it stands for itself in JavaScript and in RE2 alike. */
const ESCAPABLE = /^[!-/:-@[-`{-~]$/;
/** Characters that are literal text unescaped: printable ASCII but RE2's and JavaScript's syntax characters. */
const PLAIN = /^[ -~]$/;
const SYNTAX = new Set('\\^$.|?*+()[]{}'.split(''));

/**
 * The alternatives of a pattern made only of literal text and top-level `|` (escaped punctuation
 * such as `\.` counts as text), or undefined for anything else: a class, group, quantifier,
 * anchor, letter escape (`\d`, `\u0041`), non-ASCII text or an empty alternative.
 */
export function literalAlternatives(pattern: string): string[] | undefined {
  const out: string[] = [];
  let current = '';
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i] as string;
    if (c === '|') {
      if (current === '') return undefined;
      out.push(current);
      current = '';
    } else if (c === '\\') {
      const next = pattern[i + 1];
      if (next === undefined || !ESCAPABLE.test(next)) return undefined;
      current += next;
      i++;
    } else if (SYNTAX.has(c) || !PLAIN.test(c)) return undefined;
    else current += c;
  }
  if (current === '') return undefined;
  out.push(current);
  return out;
}

/** Literal alternatives on V8's RegExp (`u`, with `i` the same Unicode simple case folding as RE2's). */
function literalMatcher(literals: readonly string[], ignoreCase: boolean, patternChars: number): LineMatcher {
  const regex = new RegExp(literals.map((l) => l.replace(/[\\^$.|?*+()[\]{}/]/g, '\\$&')).join('|'), ignoreCase ? 'iu' : 'u');
  return {
    maxLineChars: Math.min(MAX_MATCH_LINE_CHARS, Math.floor(WORK_PER_CALL / (patternChars + PER_CHAR_OVERHEAD))),
    firstMatch: (line) => line.search(regex),
  };
}

function unsupported(pattern: string, what: string, toolName: string, cause?: unknown): ToolError {
  return new ToolError(
    'TOOL_ARGUMENTS_INVALID',
    toolName,
    `regular expression ${JSON.stringify(pattern)} uses ${what}, which grep does not support: it matches in linear time (RE2 syntax), ` +
      'without backreferences or lookaround. Rewrite the pattern without them (e.g. search for a simpler pattern and read the matching lines)',
    cause === undefined ? undefined : { cause },
  );
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
