/**
 * What the jobs of one shared thread hold once between them (issue 23): their config, the
 * policy and secrets derived from it, their system prompt and each job tool's OpenAI form.
 */
import { describe, expect, it } from 'vitest';
import { parseConfig } from '../../../src/shared/config.js';
import { toOpenAITool } from '../../../src/shared/tools/index.js';
import { reportAlertTool } from '../../../src/worker/job-tools.js';
import { checkedSpec, heldConfigCount, holdConfig, jobEnv, policyFor, secretsFor, sharedText } from '../../../src/worker/thread-shared.js';
import { PROCESS_TAG_VAR } from '../../../src/shared/tools/process-tag.js';

const clone = <T>(value: T): T => structuredClone(value);

describe('thread-shared', () => {
  it('equal configs (each its own clone) are one copy while a job holds it, and gone after the last release', () => {
    const config = parseConfig({ workspaceRoot: '/tmp', baseUrl: 'http://127.0.0.1:1/v1', apiKey: 'sk-test-123456789' });
    const before = heldConfigCount();
    const a = holdConfig(clone(config));
    const b = holdConfig(clone(config));
    expect(b.config).toBe(a.config);
    expect(heldConfigCount()).toBe(before + 1);
    const other = holdConfig(clone({ ...config, model: 'other' }));
    expect(other.config).not.toBe(a.config);
    expect(heldConfigCount()).toBe(before + 2);
    a.release();
    a.release(); // twice: counted once
    expect(heldConfigCount()).toBe(before + 2);
    b.release();
    other.release();
    expect(heldConfigCount()).toBe(before);
    // A new job after that gets its own again.
    const c = holdConfig(clone(config));
    expect(c.config).not.toBe(a.config);
    c.release();
  });

  it('checkedSpec validates, shares the config, and reports an invalid spec', () => {
    const config = parseConfig({ workspaceRoot: '/tmp', baseUrl: 'http://127.0.0.1:1/v1' });
    const spec = { id: 'bg-1', label: 'x', task: 'do it', role: 'primary', config, attempt: 1 };
    const one = checkedSpec(clone(spec));
    const two = checkedSpec(clone({ ...spec, id: 'bg-2' }));
    if ('invalid' in one || 'invalid' in two) throw new Error('expected valid specs');
    expect(two.spec.config).toBe(one.spec.config);
    expect(two.spec.id).toBe('bg-2');
    // While one holds the config, the rest of a spec is still checked, and a config that differs is parsed in full.
    expect(checkedSpec(clone({ ...spec, id: '' }))).toHaveProperty('invalid');
    expect(checkedSpec(clone({ ...spec, extra: 1 }))).toHaveProperty('invalid');
    expect(checkedSpec(clone({ ...spec, config: { ...config, maxIterations: -1 } }))).toHaveProperty('invalid');
    one.release();
    two.release();
    expect(checkedSpec({ id: 'bg-3' })).toHaveProperty('invalid');
  });

  it("jobEnv: one scrubbed copy, with the job's process tag on top", () => {
    const plain = jobEnv(undefined);
    expect(plain.PATH).toBe(process.env.PATH);
    expect(plain[PROCESS_TAG_VAR]).toBeUndefined();
    const tagged = jobEnv('tag-1');
    expect(tagged[PROCESS_TAG_VAR]).toBe('tag-1');
    expect(tagged.PATH).toBe(process.env.PATH);
  });

  it('policy and secrets are derived once per config object', () => {
    const config = parseConfig({ workspaceRoot: '/tmp', baseUrl: 'http://127.0.0.1:1/v1', apiKey: 'sk-test-123456789' });
    expect(policyFor(config)).toBe(policyFor(config));
    expect(secretsFor(config)).toBe(secretsFor(config));
    expect(secretsFor(config)).toEqual(['sk-test-123456789']);
  });

  it('sharedText returns the copy already held for an equal string', () => {
    const first = ['You are', 'a background agent'].join(' ');
    const second = ['You are a', 'background agent'].join(' ');
    expect(sharedText(first)).toBe(first);
    expect(sharedText(second)).toBe(first);
    for (let i = 0; i < 100; i++) sharedText(`filler ${i}`);
    // Past its bound the oldest is dropped: an equal string is then kept as given.
    expect(sharedText(second)).toBe(second);
  });

  it("each job's own report_alert definition shares one OpenAI form; a different bound has its own", () => {
    const send = () => {};
    const a = toOpenAITool(reportAlertTool(send, 3));
    const b = toOpenAITool(reportAlertTool(send, 3));
    const c = toOpenAITool(reportAlertTool(send, 5));
    expect(b).toBe(a);
    expect(c).not.toBe(a);
    expect(c.function.description).toContain('at most 5 times');
    expect(a.function.parameters).toHaveProperty('properties.message');
  });
});
