/**
 * Directives a test or benchmark puts in a task to make the plausible agent do one precise
 * thing, deterministically:
 *
 *   [sim-read: notes/a.txt]      the job reads that file (read_file) before it answers
 *   [sim-answer-chars: 50000]    its answer is exactly that many characters (before the result tag)
 *   [sim-invalid-result: once]   a typed job's first value does not match its schema (`always`: none does; typed-reply.ts)
 *
 * They are taken out of the task before the agent looks for keywords.
 */
export interface SimDirectives {
  read?: string;
  answerChars?: number;
  /** A typed job's value misses its schema: the first time (`once`, to exercise the repair turn) or every time. */
  invalidResult?: 'once' | 'always';
  /** The task without its directives. */
  task: string;
}

const DIRECTIVE = /\[sim-(read|answer-chars|invalid-result):\s*([^\]]+?)\s*\]/g;
/** The longest answer a directive may ask for (the sim's own bound, well under `maxResponseChars`). */
const MAX_ANSWER_CHARS = 5_000_000;

export function simDirectives(task: string): SimDirectives {
  const out: SimDirectives = { task: task.replace(DIRECTIVE, ' ').replace(/\s+/g, ' ').trim() };
  for (const match of task.matchAll(DIRECTIVE)) {
    const value = match[2] as string;
    if (match[1] === 'read') out.read = value;
    else if (match[1] === 'invalid-result') {
      if (value === 'once' || value === 'always') out.invalidResult = value;
    } else {
      const n = Number(value);
      if (Number.isInteger(n) && n >= 0) out.answerChars = Math.min(n, MAX_ANSWER_CHARS);
    }
  }
  return out;
}

/**
 * `chars` characters of numbered lines that differ per `seed`, with angle brackets and an emoji
 * (a surrogate pair) in every line, so escaping and cutting are exercised. Never ends between
 * the halves of a surrogate pair.
 */
export function paddedAnswer(seed: string, chars: number): string {
  const parts: string[] = [];
  let length = 0;
  for (let i = 1; length < chars; i++) {
    const line = `Finding ${i} of ${seed}: value <${(i * 7919) % 10_007}> holds & checks out 🙂\n`;
    parts.push(line);
    length += line.length;
  }
  let text = parts.join('').slice(0, chars);
  const last = text.charCodeAt(text.length - 1);
  if (last >= 0xd800 && last <= 0xdbff) text = `${text.slice(0, -1)}.`;
  return text;
}
