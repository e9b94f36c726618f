/**
 * Deterministic text heuristics of the plausible agent: keywords of a task, the questions of a
 * prompt, and short labels. No randomness, no clock: the same text always gives the same result.
 */

const STOPWORDS = new Set(
  (
    'what where which when whom whose does doing done this that these those with from into onto about above below ' +
    'there their them they then than have has having been being were will would should could shall must might ' +
    'answer answers files file workspace repository repo code implemented implement implementation work works ' +
    'working used uses using use make makes made find found show shows tell explain describe list look each ' +
    'some many more most much also only just like such other over under very your yours ours please here ' +
    "know need needs want wants does it's what's how's why's project thing things part parts kind whole " +
    'same between within without after before while because every across main defined define handle handled handles ' +
    'cover covers covered happen happens live lives located contain contains called'
  ).split(/\s+/),
);

const WORD = /[A-Za-z_][A-Za-z0-9_]*(?:[-.][A-Za-z0-9_]+)*/g;

/** Light stemming so `workers` finds `worker.ts`, and `retries` finds `retry`. */
function stem(word: string): string {
  if (word.length > 5 && word.endsWith('ies')) return `${word.slice(0, -3)}y`;
  if (word.length > 4 && word.endsWith('s') && !/(ss|us|is)$/.test(word)) return word.slice(0, -1);
  return word;
}

/**
 * Words of length >= 4, minus stopwords, ranked: identifier-like words (camelCase, snake_case,
 * dotted or with digits) first, then longer words, then earlier ones; verb forms (-ed, -ing)
 * count as shorter, since nouns name things in code more often. Lowercased and stemmed.
 */
export function keywordsOf(text: string, max = 5): string[] {
  const seen = new Map<string, { score: number; at: number }>();
  let at = 0;
  for (const match of text.matchAll(WORD)) {
    const raw = match[0];
    const lower = raw.toLowerCase();
    if (lower.length < 4 || STOPWORDS.has(lower)) continue;
    const identifier = /[a-z][A-Z]|_|\d|[-.]/.test(raw);
    const word = identifier ? lower : stem(lower);
    if (word.length < 4 || seen.has(word)) continue;
    const verbForm = !identifier && /(ed|ing)$/.test(word) ? 3 : 0;
    seen.set(word, { score: word.length + (identifier ? 10 : 0) - verbForm, at: at++ });
  }
  return [...seen.entries()]
    .sort(([, a], [, b]) => b.score - a.score || a.at - b.at)
    .slice(0, max)
    .map(([word]) => word);
}

/** Keywords in the order they appear in the text (for readable labels). */
function keywordsInOrder(text: string): string[] {
  const ranked = new Set(keywordsOf(text, 50));
  const out: string[] = [];
  for (const match of text.matchAll(WORD)) {
    const lower = match[0].toLowerCase();
    const identifier = /[a-z][A-Z]|_|\d|[-.]/.test(match[0]);
    const word = identifier ? lower : stem(lower);
    if (ranked.has(word) && !out.includes(word)) out.push(word);
  }
  return out;
}

export function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/**
 * The separate questions of a prompt: numbered items (`1.` / `1)`), bullets (`-`, `*`, `•`),
 * or else sentences ending in `?`. Fewer than two means "not a multi-question prompt".
 */
export function splitQuestions(text: string): string[] {
  const lines = text.split(/\r?\n/);
  const numbered = lines.map((l) => /^\s*\d+[.)]\s+(.+)$/.exec(l)?.[1]?.trim()).filter((q): q is string => !!q);
  if (numbered.length >= 2) return numbered;
  const bullets = lines.map((l) => /^\s*[-*•]\s+(.+)$/.exec(l)?.[1]?.trim()).filter((q): q is string => !!q);
  if (bullets.length >= 2) return bullets;
  const questions = text
    .replace(/\s+/g, ' ')
    .split(/(?<=\?)\s+/)
    .map((s) => s.trim())
    .filter((s) => s.endsWith('?'))
    // A sentence before the question in the same segment ("Hi. Where is x?") is dropped.
    .map((s) => s.split(/(?<=[.!])\s+/).pop() ?? s);
  return questions.length >= 2 ? questions : [];
}

/** A short label (<= `max` chars) from a question's keywords, in reading order. */
export function labelFor(question: string, fallback: string, max = 40): string {
  let label = '';
  for (const word of keywordsInOrder(question).slice(0, 4)) {
    const next = label ? `${label} ${word}` : word;
    if (next.length > max) break;
    label = next;
  }
  if (!label) label = question.replace(/\s+/g, ' ').trim().slice(0, max).trim();
  return label || fallback;
}

/** First sentence of the first non-empty line, for quoting. */
export function firstSentence(text: string, max = 200, sentences = 1): string {
  const line = text
    .split(/\r?\n/)
    .map((l) => l.trim())
    .find((l) => l.length > 0 && !l.startsWith('<result'));
  if (!line) return '';
  const pattern = new RegExp(`^((?:.+?[.!?](?:\\s+|$)){1,${sentences}})`);
  const sentence = (pattern.exec(line)?.[1] ?? line).trim();
  return sentence.length > max ? `${sentence.slice(0, max - 1)}…` : sentence;
}
