/**
 * The fenced code blocks of the Markdown docs, each with the `<!-- example: … -->` annotations
 * on the lines just above it (docs/CONTRIBUTING.md "Code examples"). Every block is an example
 * the docs test runs or checks; only `text` blocks (output shown to the reader) are not run, and
 * a block without a language fails until it is given one, so a new block cannot be missed.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';

export interface Annotations {
  /** `skip (reason)`: not run, for the reason given (required). */
  skip?: string;
  /** `setup …`: code in the block's language run before it (shell: in its folder; TS: in its scope). */
  setup: string[];
  /** `expect "…"`: text its output (stdout and stderr) must contain. */
  expect: string[];
  /** `continues`: the previous block of the same language in the file runs first, in the same program. */
  continues?: true;
  /** `data (what)`: a JSON block that is not a config file: parsed, not checked against the config schema. */
  data?: string;
  /** Annotations this parser did not understand (a typo must not silently skip a check). */
  unknown: string[];
}

export interface CodeBlock {
  /** Path relative to the repository, e.g. `docs/cli.md`. */
  file: string;
  /** 1-based line of the opening fence. */
  line: number;
  /** First word of the info string, lower case; '' when there is none. */
  lang: string;
  /** The block's text, the fence's indent removed. */
  code: string;
  notes: Annotations;
}

const FENCE = /^( *)(`{3,}|~{3,})\s*([^\s`]*)/;
const ANNOTATION = /^\s*<!--\s*example:\s*(.*?)\s*-->\s*$/;

/** Parses one annotation's text into `notes`. */
function annotate(notes: Annotations, text: string): void {
  const [, kind = '', rest = ''] = /^(\S+)\s*([\s\S]*)$/.exec(text) ?? [];
  const reason = /^\((.+)\)$/.exec(rest)?.[1]?.trim();
  if (kind === 'skip' && reason) notes.skip = reason;
  else if (kind === 'data' && reason) notes.data = reason;
  else if (kind === 'setup' && rest) notes.setup.push(rest);
  else if (kind === 'continues' && !rest) notes.continues = true;
  else if (kind === 'expect' && /^".+"$/.test(rest)) notes.expect.push(rest.slice(1, -1));
  else notes.unknown.push(text);
}

/** The fenced blocks of one Markdown file (`root`-relative `file`). */
export function codeBlocks(root: string, file: string): CodeBlock[] {
  const lines = readFileSync(path.join(root, file), 'utf8').split('\n');
  const blocks: CodeBlock[] = [];
  for (let i = 0; i < lines.length; i++) {
    const open = FENCE.exec(lines[i] ?? '');
    if (!open) continue;
    const [, indent = '', fence = '', lang = ''] = open;
    const body: string[] = [];
    let end = i + 1;
    for (; end < lines.length; end++) {
      const text = lines[end] ?? '';
      if (text.trimStart().startsWith(fence) && text.trim().replace(/[`~]/g, '') === '') break;
      body.push(text.startsWith(indent) ? text.slice(indent.length) : text.trimStart());
    }
    const notes: Annotations = { setup: [], expect: [], unknown: [] };
    const above: string[] = [];
    for (let j = i - 1; j >= 0 && ANNOTATION.test(lines[j] ?? ''); j--) above.unshift(ANNOTATION.exec(lines[j] ?? '')?.[1] ?? '');
    for (const text of above) annotate(notes, text);
    const previous = notes.continues ? blocks.findLast((block) => block.lang === lang.toLowerCase()) : undefined;
    const code = previous ? `${previous.code}\n${body.join('\n')}` : body.join('\n');
    blocks.push({
      file,
      line: i + 1,
      lang: lang.toLowerCase(),
      code,
      notes: previous ? { ...notes, setup: [...previous.notes.setup, ...notes.setup] } : notes,
    });
    i = end;
  }
  return blocks;
}
