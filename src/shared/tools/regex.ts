import { RE2JS } from 're2js';
import { ToolError } from '../errors.js';

/**
 * grep's regular expressions run on re2js, a pure-JavaScript port of RE2: matching time grows
 * linearly with the input, whatever the pattern, so `(a+)+$` cannot stall a thread (V8's
 * backtracking engine took 76 s on 31 characters). The price is RE2's syntax: no backreferences
 * and no lookaround. JavaScript syntax is translated (`\u0041`, named groups); what RE2 cannot
 * express is refused with a message that says what to do instead.
 */

export interface LineMatcher {
  /** Index of the first match in `line`, or -1. */
  firstMatch(line: string): number;
}

/** Features a backtracking engine has and RE2 refuses, detected to name them in the error. */
const UNSUPPORTED: ReadonlyArray<[RegExp, string]> = [
  [/\(\?<?[=!]/, 'lookahead/lookbehind ((?=…), (?!…), (?<=…), (?<!…))'],
  // An odd number of backslashes before the digit: `\\1` is a literal backslash and "1".
  [/(?:^|[^\\])(?:\\\\)*\\(?:[1-9]|k<)/, 'backreferences (\\1, \\k<name>)'],
];

export function compileLinear(pattern: string, ignoreCase: boolean, toolName: string): LineMatcher {
  // JavaScript's own parser first: a plain syntax error is reported as such. Compiling (not
  // running) a RegExp is safe: it never backtracks.
  try {
    new RegExp(pattern, ignoreCase ? 'iu' : 'u');
  } catch (unicodeError) {
    try {
      new RegExp(pattern, ignoreCase ? 'i' : '');
    } catch {
      throw new ToolError('TOOL_ARGUMENTS_INVALID', toolName, `invalid regular expression ${JSON.stringify(pattern)}: ${messageOf(unicodeError)}`, { cause: unicodeError });
    }
  }
  for (const [feature, name] of UNSUPPORTED) {
    if (feature.test(pattern)) throw unsupported(pattern, name, toolName);
  }
  let compiled: RE2JS;
  try {
    compiled = RE2JS.compile(RE2JS.translateRegExp(pattern), ignoreCase ? RE2JS.CASE_INSENSITIVE : 0);
  } catch (error) {
    throw unsupported(pattern, messageOf(error).replace(/^error parsing regexp: /, ''), toolName, error);
  }
  return {
    firstMatch(line) {
      // test() runs the DFA fast path; the position (a slower matcher) only for matching lines.
      if (!compiled.test(line)) return -1;
      const m = compiled.matcher(line);
      return m.find() ? m.start() : -1;
    },
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
