/**
 * The seeds' optional structured result tag, on the last line of a background job's answer:
 * `<result status="ok|error|partial" files_touched="path1,path2"/>`.
 */
export type ResultTagStatus = 'ok' | 'error' | 'partial';

export interface ResultTag {
  status: ResultTagStatus;
  filesTouched: string[];
}

export interface ParsedResult {
  /** The answer with the tag line removed. */
  text: string;
  /** Absent when the job did not use the convention. */
  tag?: ResultTag;
}

// Only a tag that stands alone at the very end counts; one quoted mid-text is left as text.
const TAG_AT_END = /(?:^|\n)[ \t]*<result\s+([^<>]*?)\/?>\s*(?:<\/result>)?\s*$/;
const ATTRIBUTE = /([a-z_]+)\s*=\s*"([^"]*)"/g;

export function parseResultTag(answer: string): ParsedResult {
  const match = TAG_AT_END.exec(answer);
  if (!match) return { text: answer };
  const attributes = new Map<string, string>();
  for (const [, name, value] of (match[1] ?? '').matchAll(ATTRIBUTE)) {
    if (name !== undefined && value !== undefined) attributes.set(name, value);
  }
  const status = attributes.get('status');
  if (status !== 'ok' && status !== 'error' && status !== 'partial') return { text: answer };
  const files = (attributes.get('files_touched') ?? '')
    .split(',')
    .map((f) => f.trim())
    .filter((f) => f.length > 0);
  return { text: answer.slice(0, match.index).trimEnd(), tag: { status, filesTouched: files } };
}
