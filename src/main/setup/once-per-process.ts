/**
 * Notices a process says once, however many managers it makes: a test suite or a server that
 * builds one manager per request would otherwise print the same bubblewrap line hundreds of
 * times (issue 36: 772 in one `npm test`). The one owner of that "already said" state.
 */
const said = new Set<string>();

/** True the first time this process is about to say `text`; false after. */
export function firstTimeInProcess(text: string): boolean {
  if (said.has(text)) return false;
  said.add(text);
  return true;
}
