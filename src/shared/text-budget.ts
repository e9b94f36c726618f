/**
 * The one way forkpool shortens a long text: keep its head and its tail, say what was left out.
 * Tool output, bash's streamed output, progress events, summaries and the results delivered to
 * the parent (main/delivery/delivery-budget.ts, which measures room in quoted characters) all
 * divide their room with {@link headTailRoom}; what differs is the head's share, one constant
 * per kind of text below.
 */

/**
 * The head's part of the room when a text is cut to its head and tail: the start of a text says
 * what it is, the end holds its conclusion, its result tag or a command's error, so both stay
 * and the head gets a little more.
 */
export const HEAD_SHARE = 0.6;

/** A command's output (bash) gives the tail more: its errors and its exit come last. */
export const COMMAND_OUTPUT_HEAD_SHARE = 0.4;

/** A result delivered into the parent's turn keeps more head: the answer comes first (the rest is one `read_background_result` away). */
export const DELIVERED_HEAD_SHARE = 0.75;

/** How `room` characters divide between the head and the tail (the head rounded up). */
export function headTailRoom(room: number, headShare = HEAD_SHARE): { head: number; tail: number } {
  const head = Math.ceil(room * headShare);
  return { head, tail: room - head };
}

/** What stands where text was cut out. */
const omittedMarker = (omitted: number) => `\n…[${omitted} characters omitted]…\n`;

/** Caps text to `maxChars`, keeping the head and the tail (the seeds' `SummarizeLong`), with a marker that counts what was left out. */
export function capHeadTail(text: string, maxChars: number, headShare = HEAD_SHARE): string {
  if (text.length <= maxChars) return text;
  // A budget too small for the marker keeps the head only; the marker alone would exceed it.
  if (maxChars < omittedMarker(text.length).length) return text.slice(0, Math.max(0, maxChars));
  // Reserve room for the marker itself so the output never exceeds maxChars.
  const { head, tail } = headTailRoom(Math.max(0, maxChars - omittedMarker(text.length).length), headShare);
  return text.slice(0, head) + omittedMarker(text.length - head - tail) + (tail > 0 ? text.slice(text.length - tail) : '');
}

/**
 * The same cut for text that streams in (a command's output): keeps at most about `max`
 * characters of head and `2 × max` of tail however much arrives, so memory stays bounded.
 */
export class HeadTailBuffer {
  readonly #max: number;
  #head = '';
  #tail = '';
  /** Characters pushed so far. */
  total = 0;

  constructor(max: number) {
    this.#max = max;
  }

  push(chunk: string): void {
    this.total += chunk.length;
    if (this.#head.length < this.#max) {
      const room = this.#max - this.#head.length;
      this.#head += chunk.slice(0, room);
      chunk = chunk.slice(room);
      if (chunk.length === 0) return;
    }
    this.#tail += chunk;
    if (this.#tail.length > 2 * this.#max) this.#tail = this.#tail.slice(-this.#max);
  }

  /** The whole text if it fits in `budget`, else head + marker + tail, divided as {@link capHeadTail} does (a command's output: {@link COMMAND_OUTPUT_HEAD_SHARE}). */
  text(budget: number, headShare = COMMAND_OUTPUT_HEAD_SHARE): string {
    // Nothing dropped yet: the complete text is here, cut it as capHeadTail does.
    if (this.total === this.#head.length + this.#tail.length) return capHeadTail(this.#head + this.#tail, budget, headShare);
    // A middle part was dropped; the tail holds at least `max` >= room characters.
    const room = headTailRoom(Math.max(0, budget - omittedMarker(this.total).length), headShare);
    const headKeep = Math.min(this.#head.length, room.head);
    const tailKeep = Math.min(this.#tail.length, room.head + room.tail - headKeep);
    return this.#head.slice(0, headKeep) + omittedMarker(this.total - headKeep - tailKeep) + this.#tail.slice(this.#tail.length - tailKeep);
  }
}
