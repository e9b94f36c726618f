import type { ForkpoolConfig } from '../../shared/config.js';
import { contextWindowOf } from '../../shared/models.js';
import { BACKGROUND_RESULTS_CLOSE, BACKGROUND_RESULTS_OPEN } from '../../shared/prompts.js';
import { DELIVERED_HEAD_SHARE, headTailRoom } from '../../shared/text-budget.js';
import { ELEMENT_TAG_AT, NO_TEXT_LINE, NO_TEXT_RAW, escapeElementTags, jobHeadLines, quoteLines, type ResultWrap } from '../views/delivery-format.js';
import type { JobRecord } from '../ledger/ledger.js';

/** The estimate used everywhere for the parent's context (see session.ts): 4 characters a token. */
export const CHARS_PER_TOKEN = 4;
/** Below this many characters of room a cut result shows its head only, no tail. */
const TAIL_MIN_ROOM = 800;

/** The per-turn injection budget in estimated tokens: `delivery.maxInjectedTokens`, else a share of the parent model's context window. */
export function injectionBudgetTokens(config: Pick<ForkpoolConfig, 'delivery' | 'models' | 'model'>): number {
  return config.delivery.maxInjectedTokens ?? Math.floor(contextWindowOf(config, config.model) * config.delivery.contextShare);
}

export interface DeliveryInput {
  /** Ended, undelivered jobs, oldest first: the candidates. */
  jobs: readonly JobRecord[];
  /** The whole block may take this many characters. */
  budgetChars: number;
  /** No result shows more than this many of its characters in one block (`background.resultMaxChars`). */
  perJobMaxChars: number;
  /** Extra lines after a job's header (a stale-result note), by job id. Counted in the budget. */
  notes?: ReadonlyMap<string, readonly string[]>;
  /** Frames each job's part (the `remy` format's `<tool_result>`); counted in the budget. */
  wrap?: ResultWrap | undefined;
}

export interface DeliveryPlan {
  /** The `<background_results>` block ('' when there is nothing to deliver). */
  block: string;
  /** The jobs in the block, in order. */
  delivered: JobRecord[];
  /** Per job shown in part: the characters `[from, to)` left out, to read with read_background_result. */
  unread: Map<string, [number, number]>;
  /** Jobs that did not fit at all: they stay undelivered for the next turn. */
  deferred: number;
}

interface Cut {
  /** Characters shown from the start, and from the end. */
  head: number;
  tail: number;
}

/**
 * How a result's text is written into its part: quoted (`| ` lines, angle brackets escaped: the
 * `forkpool` format) or raw (the text itself, only the format's tags escaped: `remy`).
 */
interface Body {
  raw: boolean;
}

interface Sized {
  job: JobRecord;
  text: string;
  body: Body;
  headLines: string[];
  /** The lines before and after its part ([] without a wrap). */
  wrapOpen: string[];
  wrapClose: string[];
  /** The job's part with no text shown and the longest "left out" note: what it costs at least. */
  minCost: number;
  /** What its part costs beyond `minCost` when shown as much as `perJobMaxChars` allows (may be negative: short and whole). */
  extra: number;
}

/**
 * Plans one turn's delivery under a total budget: every result gets its header; the room left
 * is shared fairly (water-filling: a result shorter than its share gives the rest back to the
 * others); a result that does not fit whole shows its head and tail and says which characters
 * were left out and how to read them. Jobs whose header alone no longer fits wait for the
 * next turn. Nothing is lost: the full text stays in the ledger.
 */
export function planDelivery(input: DeliveryInput): DeliveryPlan {
  const { budgetChars, perJobMaxChars } = input;
  if (input.jobs.length === 0) return { block: '', delivered: [], unread: new Map(), deferred: 0 };
  const sized = input.jobs.map((job) => size(job, input.notes?.get(job.id) ?? [], perJobMaxChars, input.wrap));
  const frame = BACKGROUND_RESULTS_OPEN.length + 1 + BACKGROUND_RESULTS_CLOSE.length;
  const deferredRoom = input.jobs.length > 1 ? 1 + deferredLine(input.jobs.length).length : 0;
  // Whole headers first, oldest first; always at least one job, or nothing would ever move.
  const chosen: Sized[] = [];
  let fixed = frame + deferredRoom;
  for (const item of sized) {
    if (chosen.length > 0 && fixed + 1 + item.minCost > budgetChars) break;
    chosen.push(item);
    fixed += 1 + item.minCost;
  }
  const deferred = sized.length - chosen.length;
  if (deferred === 0) fixed -= deferredRoom;
  const grants = shareFairly(
    chosen.map((c) => c.extra),
    Math.max(0, budgetChars - fixed),
  );
  const parts: string[] = [];
  const unread = new Map<string, [number, number]>();
  chosen.forEach((item, i) => {
    const grant = grants[i] as number;
    const whole = item.text.length <= perJobMaxChars && grant >= item.extra;
    const cut = whole ? undefined : cutToFit(item.text, item.extra <= grant ? Number.POSITIVE_INFINITY : grant, perJobMaxChars);
    parts.push(formatPart(item, cut));
    if (cut) unread.set(item.job.id, [cut.head, item.text.length - cut.tail]);
  });
  if (deferred > 0) parts.push(deferredLine(deferred));
  return { block: [BACKGROUND_RESULTS_OPEN, ...parts, BACKGROUND_RESULTS_CLOSE].join('\n'), delivered: chosen.map((c) => c.job), unread, deferred };
}

/** Max-min fair shares of `pool` for these demands (each gets at most its demand; none gets less than an equal share unless it asked for less). */
export function shareFairly(demands: readonly number[], pool: number): number[] {
  const grants = demands.map(() => 0);
  const order = demands.map((d, i) => ({ d: Math.max(0, d), i })).sort((a, b) => a.d - b.d);
  let left = pool;
  order.forEach(({ d, i }, k) => {
    const share = Math.floor(left / (order.length - k));
    const grant = Math.min(d, share);
    grants[i] = grant;
    left -= grant;
  });
  return grants;
}

function size(job: JobRecord, notes: readonly string[], perJobMaxChars: number, wrap: ResultWrap | undefined): Sized {
  const text = (job.resultText ?? '').trim() ? (job.resultText as string) : '';
  const body: Body = { raw: wrap?.rawBody === true };
  // A raw body is the text itself: the header stays only to say a job did not end ok.
  const headLines = [...(body.raw && job.status === 'ok' ? [] : jobHeadLines(job)), ...notes];
  const wrapOpen = wrap ? [wrap.open(job)] : [];
  const wrapClose = wrap ? [wrap.close] : [];
  // The wrap's lines are fixed costs of the part, as its header is (each with its line break).
  const wrapCost = [...wrapOpen, ...wrapClose].reduce((n, line) => n + line.length + 1, 0);
  // Lines joined by newlines: n lines cost their lengths plus n - 1 (no head lines: the wrap's own break stands in).
  const headCost = headLines.reduce((n, line) => n + line.length, 0) + Math.max(0, headLines.length - 1) + wrapCost - (headLines.length === 0 ? 1 : 0);
  // The note's numbers are at most the text's length: the longest note has that length in each.
  const minCost = headCost + 1 + leftOutNote(job.id, text.length, text.length, text.length, text.length).length;
  let cost: number;
  if (text.length === 0) cost = headCost + 1 + (body.raw ? NO_TEXT_RAW : NO_TEXT_LINE).length;
  else if (text.length <= perJobMaxChars) cost = headCost + bodyCost(body, text, 0, text.length);
  else {
    const cut = cutToFit(text, Number.POSITIVE_INFINITY, perJobMaxChars, body);
    cost = minCost + bodyCost(body, text, 0, cut.head) + bodyCost(body, text, text.length - cut.tail, text.length);
  }
  return { job, text, body, headLines, wrapOpen, wrapClose, minCost, extra: cost - minCost };
}

/**
 * What `text[from, to)` adds to a part: its joining newline, and when quoted `| ` before each of
 * its lines and `&lt;`/`&gt;` for angle brackets (see quoteLines). 0 for an empty range.
 */
function bodyCost(body: Body, text: string, from: number, to: number): number {
  if (to <= from) return 0;
  let cost = leadCost(body);
  for (let i = from; i < to; i++) cost += charCost(body, text, i);
  return cost;
}

/** A body's joining newline, and when quoted the first line's `| `. */
function leadCost(body: Body): number {
  return body.raw ? 1 : 3;
}

function charCost(body: Body, text: string, at: number): number {
  const code = text.charCodeAt(at);
  // Raw: a character is itself, but "<" opening one of the format's tags becomes "&lt;" (a cut
  // through such a tag leaves it unescaped: counted anyway, so never under).
  if (body.raw) {
    if (code !== 60) return 1;
    ELEMENT_TAG_AT.lastIndex = at;
    return ELEMENT_TAG_AT.test(text) ? 4 : 1;
  }
  // A line break (any of LINE_BREAKS; CRLF counted twice, never under) becomes a joining
  // newline plus "| "; "<" and ">" become four characters.
  return isLineBreak(code) ? 3 : code === 60 || code === 62 ? 4 : 1;
}

function isLineBreak(code: number): boolean {
  return (code >= 10 && code <= 13) || code === 0x85 || code === 0x2028 || code === 0x2029;
}

/**
 * The longest head and tail of `text` whose quoted form fits `room` characters and whose length
 * together is at most `maxChars`: the room divided as every head-and-tail cut divides it
 * (headTailRoom, text-budget.ts), three quarters to the head (DELIVERED_HEAD_SHARE), no tail
 * when the room is small. The same cut as
 * `capHeadTail`, measured in quoted characters and returned as offsets (the note names them for
 * `read_background_result`). A cut never splits a surrogate pair.
 */
export function cutToFit(text: string, room: number, maxChars: number, body: Body = { raw: false }): Cut {
  const withTail = room >= TAIL_MIN_ROOM && maxChars >= TAIL_MIN_ROOM;
  const tailRoom = !withTail ? 0 : Number.isFinite(room) ? headTailRoom(room, DELIVERED_HEAD_SHARE).tail : room;
  const headRoom = Number.isFinite(room) ? room - tailRoom : room;
  const tailMax = withTail ? headTailRoom(maxChars, DELIVERED_HEAD_SHARE).tail : 0;
  const head = fitForward(text, headRoom, maxChars - tailMax, body);
  const tail = withTail ? fitBackward(text, tailRoom, tailMax, head, body) : 0;
  return { head, tail };
}

/** The most characters from the start whose quoted form fits `room`. */
function fitForward(text: string, room: number, maxChars: number, body: Body): number {
  let cost = leadCost(body);
  let k = 0;
  const limit = Math.min(maxChars, text.length);
  while (k < limit) {
    const c = charCost(body, text, k);
    if (cost + c > room) break;
    cost += c;
    k++;
  }
  if (k > 0 && k < text.length && isHighSurrogate(text.charCodeAt(k - 1))) k--;
  return k;
}

/** The most characters from the end (not reaching into the first `floor`) whose quoted form fits `room`. */
function fitBackward(text: string, room: number, maxChars: number, floor: number, body: Body): number {
  let cost = leadCost(body);
  let t = 0;
  const limit = Math.min(maxChars, text.length - floor);
  while (t < limit) {
    const c = charCost(body, text, text.length - 1 - t);
    if (cost + c > room) break;
    cost += c;
    t++;
  }
  if (t > 0 && isLowSurrogate(text.charCodeAt(text.length - t))) t--;
  return t;
}

function isHighSurrogate(code: number): boolean {
  return code >= 0xd800 && code <= 0xdbff;
}

function isLowSurrogate(code: number): boolean {
  return code >= 0xdc00 && code <= 0xdfff;
}

function formatPart(item: Sized, cut: Cut | undefined): string {
  const lines = [...item.wrapOpen, ...item.headLines];
  const { text, body } = item;
  const write = (slice: string): string[] => (body.raw ? [escapeElementTags(slice)] : quoteLines(slice));
  if (!cut) {
    lines.push(...(text ? write(text) : [body.raw ? NO_TEXT_RAW : NO_TEXT_LINE]));
  } else {
    if (cut.head > 0) lines.push(...write(text.slice(0, cut.head)));
    lines.push(leftOutNote(item.job.id, text.length - cut.tail - cut.head, cut.head, text.length - cut.tail, text.length));
    if (cut.tail > 0) lines.push(...write(text.slice(text.length - cut.tail)));
  }
  lines.push(...item.wrapClose);
  return lines.join('\n');
}

/** The line that says what a cut result left out and how to read it (never quoted: it is forkpool's, not the job's). */
function leftOutNote(jobId: string, omitted: number, from: number, to: number, total: number): string {
  return `[… ${omitted} characters omitted (characters ${from} to ${to} of ${total}): the turn's result budget is shared by every result delivered now. Read them with read_background_result(job_id: "${jobId}", offset: ${from}).]`;
}

function deferredLine(count: number): string {
  return `[${count} more background result(s) did not fit this turn's budget; they are delivered at your next turn. list_background_agents shows them.]`;
}
