/**
 * The CLI's parts in process: the fanout output (status line on stderr erased before every
 * stdout line, wrapping never switched off), the line reader's backpressure, line parsing and
 * the terminal-safe preview.
 */
import path from 'node:path';
import { PassThrough } from 'node:stream';
import { setImmediate as nextTurn } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { parseLine } from '../../src/cli/fanout.js';
import { escapeForTerminal, preview } from '../../src/main/views/terminal-lines.js';
import { LineReader } from '../../src/cli/line-reader.js';
import { countTaskLines, FanoutOutput, formatDuration, statusText, type TextSink } from '../../src/cli/progress.js';
import { useCleanup } from '../helpers/cleanup.js';
import { tempWorkspace } from '../helpers/config.js';

const cleanup = useCleanup();

/** stdout and stderr of one terminal: both write into the same transcript, as on a real TTY. */
function fakeTerminal(columns = 40) {
  let transcript = '';
  let stdoutText = '';
  const stdout: TextSink = {
    isTTY: true,
    columns,
    write: (text: string) => {
      transcript += text;
      stdoutText += text;
      return true;
    },
  };
  const stderr: TextSink = { isTTY: true, columns, write: (text: string) => (transcript += text) };
  return { stdout, stderr, transcript: () => transcript, stdoutText: () => stdoutText };
}

/** What a terminal shows: `\r` returns to column 0, `ESC[2K` erases the line, `\n` ends it. */
function renderScreen(transcript: string): string[] {
  const lines: string[] = [''];
  let column = 0;
  for (let i = 0; i < transcript.length; i++) {
    if (transcript.startsWith('\u001b[2K', i)) {
      lines[lines.length - 1] = '';
      i += 3;
    } else if (transcript[i] === '\r') column = 0;
    else if (transcript[i] === '\n') {
      lines.push('');
      column = 0;
    } else {
      const line = lines[lines.length - 1] ?? '';
      lines[lines.length - 1] = line.slice(0, column) + transcript[i] + line.slice(column + 1);
      column++;
    }
  }
  return lines;
}

describe('FanoutOutput', () => {
  it('erases the status line before each stdout line, so every JSON line is whole on screen', () => {
    const term = fakeTerminal(40);
    const out = new FanoutOutput(term.stdout, term.stderr, true);
    const records = [
      { line: 1, status: 'ok', result: 'a'.repeat(120) },
      { line: 2, status: 'partial' },
      { line: 3, status: 'refused' },
    ];
    out.status('fanout: 0/3 done | failed 0 | running 3 | queued 0 | a long status line that is wider than forty columns');
    for (const [i, record] of records.entries()) {
      out.result(JSON.stringify(record));
      out.status(`fanout: ${i + 1}/3 done`);
    }
    out.note('forkpool fanout: line 9: refused');
    out.stop();
    // stdout itself carries only complete JSON lines, no control bytes.
    expect(term.stdoutText()).toBe(records.map((r) => `${JSON.stringify(r)}\n`).join(''));
    // On screen, each JSON line stands alone on its own line, untouched by the status line.
    const screen = renderScreen(term.transcript()).filter((l) => l !== '');
    expect(screen).toEqual([...records.map((r) => JSON.stringify(r)), 'forkpool fanout: line 9: refused']);
    // Line wrapping is never switched off (ESC[?7l), and the status line never wraps.
    expect(term.transcript()).not.toContain('\u001b[?7l');
    for (const drawn of term.transcript().split(/\r\u001b\[2K/)) {
      if (!drawn.includes('\n')) expect(drawn.length).toBeLessThan(40);
    }
  });

  it('writes nothing but the lines when not live', () => {
    const term = fakeTerminal();
    const out = new FanoutOutput(term.stdout, term.stderr, false);
    out.status('ignored');
    out.result('{"line":1}');
    out.note('a note');
    out.stop();
    expect(term.transcript()).toBe('{"line":1}\na note\n');
  });
});

describe('LineReader', () => {
  it('pauses its input while lines are not taken and resumes as they are', async () => {
    const input = new PassThrough({ encoding: 'utf8' });
    const reader = new LineReader(input);
    let written = 0;
    // One chunk per line, each followed by a turn of the event loop so it can be read.
    for (; written < 500; written++) {
      input.write(`{"task":"line ${written + 1}"}\n`);
      await nextTurn();
    }
    // Nothing taken yet: the reader stopped pulling, the rest waits in the stream.
    expect(reader.buffered).toBeLessThanOrEqual(64);
    expect(input.readableLength).toBeGreaterThan(0);
    input.end();
    const taken: string[] = [];
    for (let line = await reader.next(); line !== undefined; line = await reader.next()) taken.push('text' in line ? line.text : 'too long');
    expect(taken).toHaveLength(500);
    expect(taken[0]).toBe('{"task":"line 1"}');
    expect(taken[499]).toBe('{"task":"line 500"}');
  });

  it('refuses an over-long line while reading it: never holds more than the cap, reports its number and size, goes on', async () => {
    const input = new PassThrough();
    const reader = new LineReader(input, { maxLineBytes: 1000 });
    input.write('{"task":"first"}\r\n');
    // 5 MB of one line, in chunks, before its newline arrives: the reader drops it as it comes.
    let held = 0;
    for (let i = 0; i < 80; i++) {
      input.write(Buffer.alloc(64 * 1024, 'x'));
      await nextTurn();
      held = Math.max(held, reader.heldLineBytes);
    }
    expect(held).toBeLessThanOrEqual(1001);
    input.end(`\n${'y'.repeat(1000)}\n${'z'.repeat(1001)}\nlast`);
    const lines = [];
    for (let line = await reader.next(); line !== undefined; line = await reader.next()) lines.push(line);
    expect(lines).toEqual([
      { number: 1, text: '{"task":"first"}' },
      { number: 2, tooLong: true, bytes: 80 * 64 * 1024 },
      { number: 3, text: 'y'.repeat(1000) },
      { number: 4, tooLong: true, bytes: 1001 },
      { number: 5, text: 'last' },
    ]);
  });

  it('rejects next() on a read error and returns undefined after close()', async () => {
    const failing = new PassThrough();
    const reader = new LineReader(failing);
    failing.destroy(new Error('disk on fire'));
    await expect(reader.next()).rejects.toThrow('disk on fire');
    const open = new PassThrough();
    const closed = new LineReader(open);
    open.write('a\n');
    closed.close();
    expect(await closed.next()).toBeUndefined();
  });
});

describe('parseLine and the preview of untrusted input', () => {
  it('parses a task, skips a blank line, and defaults the label to the line number', () => {
    expect(parseLine('   ', 4)).toBeUndefined();
    expect(parseLine('{"task":"find x"}', 7)).toEqual({ line: 7, task: 'find x', label: 'line 7' });
    expect(parseLine('{"task":"find x","label":"L"}', 7)).toMatchObject({ label: 'L' });
  });

  it('never quotes a bad line raw: escaped, capped, the diagnosis kept', () => {
    const text = `not json \u001b[2J ${'z'.repeat(1000)}`;
    const result = parseLine(text, 3);
    expect(result).toHaveProperty('problem');
    const problem = (result as { problem: string }).problem;
    expect(problem).toMatch(/^not valid JSON \(/);
    expect(problem).not.toContain('\u001b');
    expect(problem).toContain('\\u001b[2J');
    expect(problem.length).toBeLessThan(250);
    expect(problem).not.toContain('z'.repeat(100));
  });

  it('escapes C0, C1, bidi and zero-width characters; keeps ordinary text and emoji whole', () => {
    expect(escapeForTerminal('a\u0000b\u009bc\u202ed\u200be\n')).toBe('a\\u0000b\\u009bc\\u202ed\\u200be\\u000a');
    expect(preview('héllo 🙂', 60)).toBe('"héllo 🙂"');
    expect(preview('🙂'.repeat(10), 3)).toBe('"🙂🙂🙂"… (10 chars)');
    expect(preview('say "hi"')).toBe('"say \\"hi\\""');
  });
});

describe('the fanout status line', () => {
  const base = { read: 40, ended: 30, failed: 1, running: 8, queued: 2, startedAt: 0, now: 10_000 };
  it('with a known total: a bar, the share and count handled, the rate and an ETA from it', () => {
    const text = statusText({ ...base, total: 100, handled: 35 });
    expect(text).toBe('fanout: ███████░░░░░░░░░░░░░ 35% 35/100 | failed 1 | running 8 | queued 2 | 3.0/s | ETA 22s | 10s');
    expect(statusText({ ...base, total: 35, handled: 35 })).toContain('100% 35/35 |');
    expect(statusText({ ...base, total: 35, handled: 35 })).toContain('| done |');
    expect(statusText({ ...base, ended: 0, total: 10, handled: 0 })).toContain('ETA …');
    expect(formatDuration(3725)).toBe('1h02m');
    expect(formatDuration(185)).toBe('3m05s');
  });

  it('for a stream: the counts so far', () => {
    expect(statusText(base)).toBe('fanout: 30 done so far (40 read) | failed 1 | running 8 | queued 2 | 3.0/s | 10s');
  });

  it("counts a file's non-blank lines (the last one without a newline too); a stream has no total", async () => {
    const dir = tempWorkspace({ 'a.jsonl': '{"task":"a"}\n\n  \r\n{"task":"b"}\r\nnot json\n{"task":"c"}', 'empty.jsonl': '' }, cleanup);
    expect(await countTaskLines(path.join(dir, 'a.jsonl'))).toBe(4);
    expect(await countTaskLines(path.join(dir, 'empty.jsonl'))).toBe(0);
    expect(await countTaskLines('-')).toBeUndefined();
    expect(await countTaskLines(path.join(dir, 'missing.jsonl'))).toBeUndefined();
    expect(await countTaskLines(dir)).toBeUndefined();
  });
});
