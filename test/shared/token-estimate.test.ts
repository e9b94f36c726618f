/**
 * The token estimate against a real tokenizer: samples of code, a tool schema's JSON, a markdown
 * table and prose, with their token counts from the cl100k_base tokenizer (gpt-tokenizer 3, counted
 * once by hand; o200k_base gives the same within 5). The flat 4-characters-a-token rule under-counts
 * code by 15% and a table by half; the estimate stays within -15%..+25% and errs high on code and JSON.
 */
import { describe, expect, it } from 'vitest';
import type { ChatCompletionMessageParam } from 'openai/resources/chat/completions';
import { estimateTokens as estimateHistoryTokens } from '../../src/main/session/session.js';
import { estimateJsonTokens, estimateTokens } from '../../src/shared/token-estimate.js';

const CODE = `export function retryBackoff(attempt: number, baseMs = 250, capMs = 30_000): number {
  if (!Number.isInteger(attempt) || attempt < 0) throw new RangeError(\`attempt must be an integer >= 0 (received \${attempt})\`);
  const exp = Math.min(capMs, baseMs * 2 ** attempt);
  return Math.floor(exp / 2 + Math.random() * (exp / 2));
}
`;
const JSON_TEXT = JSON.stringify({
  type: 'function',
  function: {
    name: 'grep',
    description: 'Search file contents for a regex.',
    parameters: {
      type: 'object',
      properties: {
        pattern: { type: 'string' },
        path: { type: 'string' },
        glob: { type: 'string' },
        max_results: { type: 'integer', minimum: 1, maximum: 500 },
      },
      required: ['pattern'],
      additionalProperties: false,
    },
  },
});
const TABLE = `| cell | jobs | wall s | p99 ms | MB peak |
|---|---:|---:|---:|---:|
| inline | 1000 | 12.41 | 3.2 | 512.6 |
| shared | 1000 | 11.87 | 4.9 | 611.0 |
| thread | 1000 | 14.02 | 2.1 | 1840.3 |
`;
const PROSE =
  'A background agent does not see this conversation: put everything it needs in its task. You are told when each one finishes, in a block at the start of a later turn.';

/** Each sample with its cl100k_base token count. */
const SAMPLES: Array<[string, string, number]> = [
  ['code', CODE, 97],
  ['tool schema JSON', JSON_TEXT, 71],
  ['markdown table', TABLE, 97],
  ['prose', PROSE, 36],
];

describe('estimateTokens', () => {
  it.each(SAMPLES)('%s: within -15%%..+25%% of the real count', (_kind, text, real) => {
    const estimate = estimateTokens(text);
    expect(estimate).toBeGreaterThanOrEqual(Math.floor(real * 0.85));
    expect(estimate).toBeLessThanOrEqual(Math.ceil(real * 1.25));
  });

  it('does not under-count code or a schema, where 4 characters a token does', () => {
    expect(Math.ceil(CODE.length / 4)).toBeLessThan(97 * 0.9);
    expect(estimateTokens(CODE)).toBeGreaterThanOrEqual(97);
    expect(estimateJsonTokens(JSON.parse(JSON_TEXT))).toBeGreaterThanOrEqual(71);
  });

  it('counts the empty string, non-Latin text and whitespace runs', () => {
    expect(estimateTokens('')).toBe(0);
    expect(estimateTokens('日本語のテキスト')).toBe(8);
    expect(estimateTokens('a\n\n    b')).toBe(3);
  });

  it("the parent history's estimate (what parentHistoryMaxTokens folds at) counts code at least as a tokenizer does", () => {
    const history: ChatCompletionMessageParam[] = [
      { role: 'system', content: PROSE },
      { role: 'user', content: 'Show me the backoff.' },
      { role: 'assistant', content: null, tool_calls: [{ id: 'c1', type: 'function', function: { name: 'read_file', arguments: '{"path":"src/retry.ts"}' } }] },
      { role: 'tool', tool_call_id: 'c1', content: CODE.repeat(20) },
    ];
    // The real count of the tool result alone is 20 × 97 tokens.
    expect(estimateHistoryTokens(history)).toBeGreaterThanOrEqual(20 * 97 + 36);
  });
});
