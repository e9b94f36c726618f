/** capConversation and redactConversation (src/shared/conversation-cap.ts): the documented cut, on plain messages. */
import { describe, expect, it } from 'vitest';
import { capConversation, redactConversation } from '../../src/shared/conversation-cap.js';

const system = { role: 'system', content: 'You are a background agent.' };
const task = { role: 'user', content: 'Find the retry backoff.' };
const call = (id: string) => ({ role: 'assistant', content: null, tool_calls: [{ id, type: 'function', function: { name: 'grep', arguments: '{}' } }] });
const result = (id: string) => ({ role: 'tool', tool_call_id: id, content: 'x'.repeat(200) });
const answer = { role: 'assistant', content: 'It is in src/retry.ts.' };

describe('capConversation', () => {
  const messages = [system, task, call('a'), result('a'), call('b'), result('b'), answer];
  const whole = JSON.stringify(messages).length;

  it('keeps a conversation within the cap as it is; keeps nothing at 0', () => {
    expect(capConversation(messages, whole)).toEqual(messages);
    expect(capConversation(messages, 0)).toBeUndefined();
  });

  it('over the cap: the head, a note with the number cut, then the newest that fit, never starting with a tool result', () => {
    // Room for the answer and the last tool result, not for the call that asked for it.
    const cap = JSON.stringify([
      system,
      task,
      { role: 'user', content: '[forkpool: 9 earlier messages of this conversation were cut to fit background.keepConversationChars]' },
      result('b'),
      answer,
    ]).length;
    const kept = capConversation(messages, cap) as unknown[];
    expect(kept.slice(0, 2)).toEqual([system, task]);
    expect(kept[2]).toEqual({ role: 'user', content: '[forkpool: 4 earlier messages of this conversation were cut to fit background.keepConversationChars]' });
    expect(kept.slice(3)).toEqual([answer]);
    expect(JSON.stringify(kept).length).toBeLessThanOrEqual(cap);
  });

  it('keeps nothing when the head and the note alone do not fit', () => {
    expect(capConversation(messages, JSON.stringify([system, task]).length)).toBeUndefined();
  });
});

describe('redactConversation', () => {
  it('redacts every configured secret in every string, at any depth', () => {
    const secret = 'sk-live-0123456789';
    const out = redactConversation(
      [
        { role: 'user', content: `key ${secret}` },
        { role: 'assistant', tool_calls: [{ function: { arguments: `{"k":"${secret}"}` } }] },
      ],
      [secret],
    );
    expect(JSON.stringify(out)).not.toContain(secret);
    expect(JSON.stringify(out)).toContain('[REDACTED]');
  });
});
