/**
 * Caps text to `maxChars`, keeping the head and the tail (the seeds' `SummarizeLong`): the
 * start of an answer says what it is, the end usually holds the conclusion and the result tag.
 */
export function capHeadTail(text: string, maxChars: number): string {
  if (text.length <= maxChars) return text;
  const marker = (omitted: number) => `\n…[${omitted} characters omitted]…\n`;
  // A budget too small for the marker keeps the head only; the marker alone would exceed it.
  if (maxChars < marker(text.length).length) return text.slice(0, Math.max(0, maxChars));
  // Reserve room for the marker itself so the output never exceeds maxChars.
  const room = Math.max(0, maxChars - marker(text.length).length);
  const head = Math.ceil(room * 0.6);
  const tail = room - head;
  const omitted = text.length - head - tail;
  return text.slice(0, head) + marker(omitted) + (tail > 0 ? text.slice(text.length - tail) : '');
}
