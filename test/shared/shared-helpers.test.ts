/**
 * Pure helpers shared by both threads: the result tag, the head+tail text budget, the loop
 * detector, secret redaction in logs, and errors across the worker boundary.
 */
import { Writable } from 'node:stream';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { createLogger } from '../../src/main/setup/logger.js';
import { capturedLogger } from '../helpers/logs.js';
import {
  AbortError,
  ForkpoolError,
  JobError,
  TimeoutError,
  ToolError,
  deserializeError,
  serializeError,
  type SerializedError,
} from '../../src/shared/errors.js';
import { LoopDetector, canonicalJson } from '../../src/shared/loop-detector.js';
import { parseResultTag } from '../../src/shared/result-tag.js';
import { COMMAND_OUTPUT_HEAD_SHARE, HEAD_SHARE, HeadTailBuffer, capHeadTail, headTailRoom } from '../../src/shared/text-budget.js';
import { redactSecrets, redactSecrets as redactToolOutput } from '../../src/shared/tools/secrets.js';

describe('parseResultTag', () => {
  it('parses a tag on the last line and removes it from the text', () => {
    const parsed = parseResultTag('Found it in src/a.ts.\n<result status="ok" files_touched="src/a.ts,src/b.ts"/>');
    expect(parsed).toEqual({ text: 'Found it in src/a.ts.', tag: { status: 'ok', filesTouched: ['src/a.ts', 'src/b.ts'] } });
  });

  it('accepts every status, trailing whitespace, a closing tag and attributes in any order', () => {
    expect(parseResultTag('x\n<result status="partial"/>  \n').tag).toEqual({ status: 'partial', filesTouched: [] });
    expect(parseResultTag('x\n  <result files_touched="a" status="error"></result>').tag).toEqual({ status: 'error', filesTouched: ['a'] });
    expect(parseResultTag('<result status="ok"/>')).toEqual({ text: '', tag: { status: 'ok', filesTouched: [] } });
  });

  it('splits files on commas, trimming and dropping empty entries', () => {
    expect(parseResultTag('x\n<result status="ok" files_touched=" a.ts , ,b dir/c.ts ,"/>').tag?.filesTouched).toEqual(['a.ts', 'b dir/c.ts']);
  });

  it('ignores a tag quoted in the middle of the text', () => {
    const text = 'I will end with <result status="ok"/> as the prompt asks.\nBut not yet.';
    expect(parseResultTag(text)).toEqual({ text });
    const inline = 'The tag looks like <result status="ok"/>';
    expect(parseResultTag(inline)).toEqual({ text: inline });
  });

  it('ignores a tag with a status outside ok|error|partial, or none', () => {
    for (const text of ['done\n<result status="done"/>', 'done\n<result status="OK"/>', 'done\n<result files_touched="a"/>']) {
      expect(parseResultTag(text)).toEqual({ text });
    }
  });

  it('returns plain text untouched', () => {
    expect(parseResultTag('just an answer')).toEqual({ text: 'just an answer' });
    expect(parseResultTag('')).toEqual({ text: '' });
  });
});

describe('capHeadTail', () => {
  it('returns text within the budget unchanged', () => {
    expect(capHeadTail('short', 10)).toBe('short');
    expect(capHeadTail('x'.repeat(200), 200)).toBe('x'.repeat(200));
  });

  it('keeps the head and the tail and says how much was omitted', () => {
    const text = `HEAD-${'m'.repeat(5_000)}-TAIL`;
    const out = capHeadTail(text, 300);
    expect(out.length).toBeLessThanOrEqual(300);
    expect(out.startsWith('HEAD-mmm')).toBe(true);
    expect(out.endsWith('mmm-TAIL')).toBe(true);
    const omitted = Number(/…\[(\d+) characters omitted\]…/.exec(out)?.[1]);
    expect(out.length - out.match(/\n…\[\d+ characters omitted\]…\n/)![0].length + omitted).toBe(text.length);
  });

  it("divides the room with one headTailRoom, whole or streamed alike: a text by HEAD_SHARE, a command's output (bash) by COMMAND_OUTPUT_HEAD_SHARE", () => {
    const text = 'h'.repeat(3_000) + 't'.repeat(3_000);
    const stream = new HeadTailBuffer(1_000);
    for (let i = 0; i < text.length; i += 700) stream.push(text.slice(i, i + 700));
    const cuts: Array<[string, number]> = [
      [capHeadTail(text, 600), HEAD_SHARE],
      [stream.text(600), COMMAND_OUTPUT_HEAD_SHARE],
      [capHeadTail(text, 600, COMMAND_OUTPUT_HEAD_SHARE), COMMAND_OUTPUT_HEAD_SHARE],
    ];
    for (const [out, share] of cuts) {
      const [head = '', tail = ''] = out.split(/\n…\[\d+ characters omitted\]…\n/);
      expect(head).toMatch(/^h+$/);
      expect(tail).toMatch(/^t+$/);
      expect(head.length).toBe(headTailRoom(head.length + tail.length, share).head);
      expect(head.length / (head.length + tail.length)).toBeCloseTo(share, 2);
    }
  });

  it('never exceeds maxChars, for any text and budget', () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 3_000 }), fc.integer({ min: 0, max: 2_000 }), (text, maxChars) => {
        const out = capHeadTail(text, maxChars);
        expect(out.length).toBeLessThanOrEqual(Math.max(maxChars, 0));
        if (text.length <= maxChars) expect(out).toBe(text);
        else if (maxChars >= 100) {
          // Large enough budgets keep a real head and tail of the original.
          expect(text.startsWith(out.slice(0, 20))).toBe(true);
          expect(text.endsWith(out.slice(-10))).toBe(true);
        }
      }),
      { numRuns: 300 },
    );
  });
});

describe('LoopDetector', () => {
  it('says ok, then warn from warnAfter, then stop at stopAfter', () => {
    const d = new LoopDetector(2, 4);
    expect([1, 2, 3, 4].map(() => d.observe('grep', { pattern: 'x' }))).toEqual(['ok', 'warn', 'warn', 'stop']);
    expect(d.repeats).toBe(4);
  });

  it('resets on different arguments or a different tool', () => {
    const d = new LoopDetector(2, 3);
    expect(d.observe('grep', { pattern: 'x' })).toBe('ok');
    expect(d.observe('grep', { pattern: 'x' })).toBe('warn');
    expect(d.observe('grep', { pattern: 'y' })).toBe('ok');
    expect(d.observe('find_files', { pattern: 'y' })).toBe('ok');
    expect(d.repeats).toBe(1);
  });

  it('compares arguments canonically (key order does not matter)', () => {
    const d = new LoopDetector(2, 3);
    d.observe('read_file', { path: 'a', limit: 10, opts: { b: 1, a: [1, { y: 2, x: 1 }] } });
    expect(d.observe('read_file', { opts: { a: [1, { x: 1, y: 2 }], b: 1 }, limit: 10, path: 'a' })).toBe('warn');
    expect(canonicalJson({ b: 1, a: [2, null, 'x'] })).toBe('{"a":[2,null,"x"],"b":1}');
  });

  it('treats unparseable argument strings as values too', () => {
    const d = new LoopDetector(2, 3);
    d.observe('read_file', '{"path": ');
    expect(d.observe('read_file', '{"path": ')).toBe('warn');
  });
});

describe('secret redaction in logs', () => {
  const KEY = 'sk-secret-0123456789abcdef';

  const captureLogger = (secrets: string[]) => capturedLogger({ level: 'debug', secrets });

  it('redactSecrets replaces every occurrence and ignores secrets shorter than 4', () => {
    expect(redactSecrets(`a ${KEY} b ${KEY}`, [KEY])).toBe('a [REDACTED] b [REDACTED]');
    expect(redactSecrets('abc abc', ['abc'])).toBe('abc abc');
    expect(redactToolOutput(`x ${KEY}-long ${KEY}`, [KEY, `${KEY}-long`])).toBe('x [REDACTED] [REDACTED]');
  });

  it('removes the key from messages, apiKey fields, nested config, headers and errors', () => {
    const { logger, lines } = captureLogger([KEY]);
    logger.info({ apiKey: KEY, config: { apiKey: KEY, model: 'm' }, headers: { authorization: `Bearer ${KEY}` } }, `calling with ${KEY}`);
    logger.debug({ job: { config: { apiKey: KEY } }, note: `embedded:${KEY}:here` }, 'nested');
    logger.error({ err: new Error(`401 for key ${KEY}`) }, 'request failed');
    logger.child({ apiKey: KEY }).warn('child logger');
    expect(lines).toHaveLength(4);
    const all = lines.join('\n');
    expect(all).not.toContain(KEY);
    const [first, second, third, fourth] = lines.map((l) => JSON.parse(l) as Record<string, any>);
    expect(first?.apiKey).toBe('[REDACTED]');
    expect(first?.config).toEqual({ apiKey: '[REDACTED]', model: 'm' });
    expect(first?.headers.authorization).toBe('[REDACTED]');
    expect(first?.msg).toBe('calling with [REDACTED]');
    expect(second?.job.config.apiKey).toBe('[REDACTED]');
    expect(second?.note).toBe('embedded:[REDACTED]:here');
    expect(third?.err.message).toBe('401 for key [REDACTED]');
    expect(fourth?.apiKey).toBe('[REDACTED]');
  });

  it("escapes a model's control characters: JSON lines stay the same JSON, pretty lines show them as text", async () => {
    const evil = 'label\u001b]0;title\u0007\u009b2J\u2028\u202e\r\\u001b-literal';
    const json = captureLogger([]);
    json.logger.info({ label: evil }, `job ${evil}`);
    expect(json.lines[0]).not.toMatch(/[\u0000-\u001f\u007f-\u009f\u2028\u202e]/);
    expect(JSON.parse(json.lines[0] ?? '{}')).toMatchObject({ label: evil, msg: `job ${evil}` });

    const chunks: string[] = [];
    const destination = new Writable({
      write(chunk: Buffer | string, _encoding, callback) {
        chunks.push(String(chunk));
        callback();
      },
    });
    createLogger({ level: 'info', secrets: [], pretty: true, destination }).info({ label: evil }, `job ${evil}`);
    await new Promise((resolve) => setImmediate(resolve));
    const shown = chunks.join('');
    expect(shown).toContain('job label\\u001b]0;title\\u0007\\u009b2J\\u2028\\u202e\\r\\u001b-literal');
    expect(shown.replace(/\n$/, '')).not.toMatch(/[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u2028\u202e]/);
  });

  it('writes nothing below the level', () => {
    const { logger, lines } = captureLogger([KEY]);
    logger.level = 'warn';
    logger.info('hidden');
    logger.warn('shown');
    expect(lines.map((l) => JSON.parse(l).msg)).toEqual(['shown']);
  });
});

describe('serializeError / deserializeError', () => {
  it('round-trips code, jobId, toolName, timeoutMs and the cause chain through structured clone', () => {
    const leaf = new TimeoutError('TOOL_TIMEOUT', 'tool bash timed out after 500 ms', 500);
    const tool = new ToolError('TOOL_FAILED', 'bash', 'bash failed', { cause: leaf });
    const job = new JobError('JOB_TIMEOUT', 'bg-7', 'job bg-7 timed out', { cause: tool });
    const wire = structuredClone(serializeError(job));
    expect(wire).toMatchObject({
      name: 'JobError',
      code: 'JOB_TIMEOUT',
      jobId: 'bg-7',
      cause: { code: 'TOOL_FAILED', toolName: 'bash', cause: { timeoutMs: 500 } },
    });

    const back = deserializeError(wire);
    expect(back).toBeInstanceOf(JobError);
    expect(back).toMatchObject({ code: 'JOB_TIMEOUT', jobId: 'bg-7', message: 'job bg-7 timed out' });
    expect(back.stack).toBe(job.stack);
    const cause = back.cause as ToolError;
    expect(cause).toBeInstanceOf(ToolError);
    expect(cause).toMatchObject({ code: 'TOOL_FAILED', toolName: 'bash' });
    const root = cause.cause as TimeoutError;
    expect(root).toBeInstanceOf(TimeoutError);
    expect(root).toMatchObject({ code: 'TOOL_TIMEOUT', timeoutMs: 500 });
    // And again: serializing the rebuilt error gives the same shape.
    expect(serializeError(back)).toEqual(wire);
  });

  it('keeps a plain ForkpoolError and the AbortError cause', () => {
    const back = deserializeError(serializeError(new AbortError(new Error('user pressed stop'))));
    expect(back).toBeInstanceOf(ForkpoolError);
    expect(back.code).toBe('ABORTED');
    expect(back.message).toBe('aborted: user pressed stop');
    expect((back.cause as Error).message).toBe('user pressed stop');
  });

  it('maps foreign errors and non-errors to a code', () => {
    expect(serializeError(Object.assign(new Error('nope'), { code: 'ENOENT' })).code).toBe('INTERNAL');
    expect(serializeError(Object.assign(new Error('x'), { name: 'AbortError' })).code).toBe('ABORTED');
    expect(serializeError(Object.assign(new Error('oom'), { code: 'ERR_WORKER_OUT_OF_MEMORY' })).code).toBe('WORKER_OUT_OF_MEMORY');
    expect(serializeError('just a string')).toEqual({ name: 'Error', code: 'INTERNAL', message: 'just a string' });
    expect(serializeError({ weird: true }).message).toBe('{"weird":true}');
  });

  it('stops at a bounded depth on a cyclic cause', () => {
    const error = new ForkpoolError('INTERNAL', 'loop');
    (error as { cause?: unknown }).cause = error;
    let depth = 0;
    for (let e: SerializedError | undefined = serializeError(error); e; e = e.cause) depth++;
    expect(depth).toBe(5);
  });
});
