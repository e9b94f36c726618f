/** What stands where text was cut out. */
const omittedMarker = (omitted: number) => `\n…[${omitted} characters omitted]…\n`;

/**
 * Caps text to `maxChars`, keeping the head and the tail (the seeds' `SummarizeLong`): the
 * start of an answer says what it is, the end usually holds the conclusion and the result tag.
 * `headShare` is the head's part of the room (command output gives the tail more: errors end there).
 */
export function capHeadTail(text: string, maxChars: number, headShare = 0.6): string {
  if (text.length <= maxChars) return text;
  // A budget too small for the marker keeps the head only; the marker alone would exceed it.
  if (maxChars < omittedMarker(text.length).length) return text.slice(0, Math.max(0, maxChars));
  // Reserve room for the marker itself so the output never exceeds maxChars.
  const room = Math.max(0, maxChars - omittedMarker(text.length).length);
  const head = Math.ceil(room * headShare);
  const tail = room - head;
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

  /** The whole text if it fits in `budget`, else head + marker + tail (`headShare` of the room to the head). */
  text(budget: number, headShare = 0.4): string {
    // Nothing dropped yet: the complete text is here, cut it as capHeadTail does.
    if (this.total === this.#head.length + this.#tail.length) return capHeadTail(this.#head + this.#tail, budget, headShare);
    // A middle part was dropped; the tail holds at least `max` >= room characters.
    const room = Math.max(0, budget - omittedMarker(this.total).length);
    const headKeep = Math.min(this.#head.length, Math.ceil(room * headShare));
    const tailKeep = Math.min(this.#tail.length, room - headKeep);
    return this.#head.slice(0, headKeep) + omittedMarker(this.total - headKeep - tailKeep) + this.#tail.slice(this.#tail.length - tailKeep);
  }
}
