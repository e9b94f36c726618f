import type { RE2JS } from 're2js';
import { ToolError } from '../errors.js';

/**
 * Globs for `find_files` and grep's `glob`, matched in linear time. picomatch compiled a glob
 * to a backtracking RegExp, so `*a*a*a*a*a*a*a*b` against a long file name blocked the thread
 * for minutes (no time limit can interrupt one RegExp call). Here a glob is translated to an
 * RE2 expression and run on re2js, whose matching time grows linearly with the path whatever
 * the pattern.
 *
 * Supported (picomatch's syntax, with `dot: true`): `*` and `?` (not across `/`; dotfiles
 * included), `**` as a whole segment (any number of folders, none included), `[abc]`, `[a-z]`,
 * `[!a]`/`[^a]`, POSIX classes (`[[:digit:]]`), `{a,b}` (nested), the extglobs `@(a|b)`,
 * `?(…)`, `+(…)`, `*(…)`, bare groups `(a|b)`, `\` escapes, and a leading `!` that negates
 * the whole glob; an unclosed bracket is a literal character. Refused with
 * TOOL_ARGUMENTS_INVALID: `!(…)` (RE2 has no negative lookahead) and globs over
 * {@link MAX_GLOB_CHARS} characters or {@link MAX_GLOB_PROGRAM} compiled instructions.
 *
 * A glob of literal text, `*` and `?` only, optionally under a leading `**` (`**`, then `/`, then
 * `*.ts` or `*zorblax*`, what models send most), is matched without re2js: a wildcard scan that
 * goes back only to the last `*` (at most path length × glob length steps, never exponential).
 */

/** The longest glob accepted (a file-name pattern is a few dozen characters). */
export const MAX_GLOB_CHARS = 1_000;
/** The largest compiled glob (RE2 instructions) accepted: bounds the work per path matched. */
export const MAX_GLOB_PROGRAM = 5_000;

export type PathMatcher = (relPath: string) => boolean;

export interface GlobOptions {
  /** Match the last segment of the path only (grep's glob without a `/`). */
  basename?: boolean;
}

export async function compileGlob(glob: string, toolName: string, field: string, options: GlobOptions = {}): Promise<PathMatcher> {
  if (glob.length > MAX_GLOB_CHARS) throw invalid(toolName, field, `at most ${MAX_GLOB_CHARS} characters`, `${glob.length}`);
  const negated = glob.startsWith('!') && !glob.startsWith('!(');
  let body = negated ? glob.slice(1) : glob;
  while (body.startsWith('./')) body = body.slice(2);
  const simple = simpleGlob(body);
  if (simple) {
    return (relPath) => {
      const subject = options.basename || simple.anyFolder ? relPath.slice(relPath.lastIndexOf('/') + 1) : relPath;
      return (!subject.includes('/') && wildcardMatch(simple.segment, subject)) !== negated;
    };
  }
  const source = new GlobTranslator(body, toolName, field).translate();
  // ~260 KB, loaded on a thread's first glob that needs it.
  const { RE2JS } = await import('re2js');
  let compiled: RE2JS;
  try {
    compiled = RE2JS.compile(`^(?:${source})$`);
  } catch (error) {
    throw invalid(toolName, field, 'a valid glob', `${JSON.stringify(glob)} (${error instanceof Error ? error.message : String(error)})`, error);
  }
  if (compiled.programSize() > MAX_GLOB_PROGRAM) {
    throw invalid(
      toolName,
      field,
      `a glob of at most ${MAX_GLOB_PROGRAM} compiled instructions`,
      `${JSON.stringify(glob.slice(0, 80))}, ${compiled.programSize()} instructions`,
    );
  }
  return (relPath) => {
    const subject = options.basename ? relPath.slice(relPath.lastIndexOf('/') + 1) : relPath;
    return compiled.test(subject) !== negated;
  };
}

/** Characters with a meaning in a glob segment besides `*` and `?` (`!`, `@`, `+` start extglobs). */
const GLOB_SYNTAX = /[\\[\]{}()!@+|/]/;

/**
 * `segment` (literal text, `*`, `?`) when the glob is that one segment, or `**` then `/` then it
 * (`anyFolder`: any folders above, none included, so the last segment of the path is matched).
 */
function simpleGlob(body: string): { segment: string; anyFolder: boolean } | undefined {
  const anyFolder = body.startsWith('**/');
  const segment = anyFolder ? body.slice(3) : body;
  // A segment that is `**` alone crosses folders; `a**` is `a*`, as in the translator.
  if (segment === '' || GLOB_SYNTAX.test(segment) || /^\*\*+$/.test(segment)) return undefined;
  return { segment, anyFolder };
}

/**
 * Glob `*` (any run) and `?` (one character) against a name without `/`, by code point as RE2
 * does: on a mismatch the scan resumes one character after where the last `*` started matching.
 */
function wildcardMatch(glob: string, name: string): boolean {
  const p = /[\uD800-\uDFFF]/.test(glob) ? Array.from(glob) : glob;
  const s = /[\uD800-\uDFFF]/.test(name) ? Array.from(name) : name;
  let pi = 0;
  let si = 0;
  let star = -1;
  let resume = 0;
  while (si < s.length) {
    const c = p[pi];
    if (c === '*') {
      star = pi++;
      resume = si;
    } else if (c !== undefined && (c === '?' || c === s[si])) {
      pi++;
      si++;
    } else if (star !== -1) {
      pi = star + 1;
      si = ++resume;
    } else return false;
  }
  while (p[pi] === '*') pi++;
  return pi === p.length;
}

/** A segment of any characters but `/` (dotfiles included: picomatch's `dot: true`). */
const STAR = '[^/]*';
/** `**` followed by `/`: zero or more whole folders. */
const GLOBSTAR_DIRS = '(?:[^/]*/)*';
/** A trailing `/**`: the folder itself or anything below it. */
const SLASH_GLOBSTAR_END = '(?:/(?s:.*))?';
const EXTGLOB_CLOSE: Readonly<Record<string, string>> = { '@': ')', '?': ')?', '+': ')+', '*': ')*' };

/** One pass over the glob; `open` holds what each open `{` or extglob `(` closes with. */
class GlobTranslator {
  readonly #glob: string;
  readonly #toolName: string;
  readonly #field: string;
  #i = 0;
  readonly #open: Array<{ kind: 'brace' | 'paren'; close: string }> = [];

  constructor(glob: string, toolName: string, field: string) {
    this.#glob = glob;
    this.#toolName = toolName;
    this.#field = field;
  }

  translate(): string {
    const g = this.#glob;
    let out = '';
    while (this.#i < g.length) {
      const c = g[this.#i] as string;
      const next = g[this.#i + 1];
      const top = this.#open.at(-1);
      if (c === '\\') {
        out += next === undefined ? '\\\\' : escapeLiteral(next);
        this.#i += 2;
      } else if (c === '*' && next === '*' && this.#atSegmentStart() && this.#segmentEndsAt(this.#i + 2)) {
        const after = g[this.#i + 2];
        this.#i += 2;
        if (after === '/') {
          out += GLOBSTAR_DIRS;
          this.#i++;
        } else out += '(?s:.*)';
      } else if (c === '/' && g.startsWith('**', this.#i + 1) && this.#segmentEndsAt(this.#i + 3) && g[this.#i + 3] !== '/') {
        out += SLASH_GLOBSTAR_END;
        this.#i += 3;
      } else if ((c === '@' || c === '?' || c === '+' || c === '*') && next === '(' && this.#closes(this.#i + 1, '(', ')')) {
        this.#open.push({ kind: 'paren', close: EXTGLOB_CLOSE[c] as string });
        out += '(?:';
        this.#i += 2;
      } else if (c === '(' && this.#closes(this.#i, '(', ')')) {
        // A bare group, as in picomatch: "*.(ts|js)".
        this.#open.push({ kind: 'paren', close: ')' });
        out += '(?:';
        this.#i++;
      } else if (c === '!' && next === '(') {
        throw invalid(
          this.#toolName,
          this.#field,
          'a glob without a negated extglob !(…) (linear-time matching cannot express it; use a leading "!" to negate the whole glob)',
          JSON.stringify(g),
        );
      } else if (c === '*') {
        out += STAR;
        this.#i++;
        while (g[this.#i] === '*') this.#i++; // a** is *
      } else if (c === '?') {
        out += '[^/]';
        this.#i++;
      } else if (c === '[') {
        out += this.#bracket();
      } else if (c === '{' && this.#closes(this.#i, '{', '}')) {
        this.#open.push({ kind: 'brace', close: ')' });
        out += '(?:';
        this.#i++;
      } else if (top && ((top.kind === 'brace' && c === '}') || (top.kind === 'paren' && c === ')'))) {
        out += top.close;
        this.#open.pop();
        this.#i++;
      } else if (top && ((top.kind === 'brace' && c === ',') || (top.kind === 'paren' && c === '|'))) {
        out += '|';
        this.#i++;
      } else {
        out += escapeLiteral(c);
        this.#i++;
      }
    }
    return out;
  }

  /** `**` counts as a globstar only as a whole segment (or a whole brace/extglob alternative). */
  #atSegmentStart(): boolean {
    const before = this.#glob[this.#i - 1];
    return before === undefined || before === '/' || ((before === '{' || before === ',' || before === '(' || before === '|') && this.#open.length > 0);
  }

  #segmentEndsAt(index: number): boolean {
    const at = this.#glob[index];
    return at === undefined || at === '/' || ((at === '}' || at === ',' || at === ')' || at === '|') && this.#open.length > 0);
  }

  /** Whether the bracket at `index` has its closing partner (else it is a literal character). */
  #closes(index: number, open: string, close: string): boolean {
    let depth = 0;
    for (let j = index; j < this.#glob.length; j++) {
      const c = this.#glob[j];
      if (c === '\\') j++;
      else if (c === open) depth++;
      else if (c === close && --depth === 0) return true;
    }
    return false;
  }

  /** `[…]` as an RE2 class that never matches `/`; an unclosed `[` is a literal. */
  #bracket(): string {
    const g = this.#glob;
    let j = this.#i + 1;
    const negate = g[j] === '!' || g[j] === '^';
    if (negate) j++;
    let members = '';
    let first = true;
    for (; j < g.length; j++) {
      const c = g[j] as string;
      if (c === ']' && !first) {
        this.#i = j + 1;
        // A class never matches "/" (a literal one is dropped; a range across it is rare).
        return negate ? `[^/${members}]` : members === '' ? '[^\\s\\S]' : `[${members}]`;
      }
      first = false;
      if (c === '\\' && j + 1 < g.length) {
        members += escapeClassMember(g[++j] as string);
      } else if (c === '[' && g[j + 1] === ':') {
        const end = g.indexOf(':]', j + 2);
        if (end === -1) members += '\\[';
        else {
          members += g.slice(j, end + 2);
          j = end + 1;
        }
      } else if (c !== '/') members += c === '-' ? '-' : escapeClassMember(c);
    }
    this.#i++;
    return '\\[';
  }
}

function escapeLiteral(c: string): string {
  return /[\\^$.|?*+()[\]{}]/.test(c) ? `\\${c}` : c;
}

function escapeClassMember(c: string): string {
  return /[\\\]^[]/.test(c) ? `\\${c}` : c;
}

function invalid(toolName: string, field: string, expected: string, received: string, cause?: unknown): ToolError {
  return new ToolError('TOOL_ARGUMENTS_INVALID', toolName, `${field}: expected ${expected}; received ${received}`, cause === undefined ? undefined : { cause });
}
