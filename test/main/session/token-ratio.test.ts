/**
 * The parent learns how its endpoint counts tokens from the usage the endpoint reports (issue
 * 40): a mock endpoint whose tokenizer makes a token of every 2 characters sent (twice what the
 * text-kind estimate assumes) reports that in `prompt_tokens`; the parent's history is then
 * counted in its tokens, so `parentHistoryMaxTokens` folds before that small context is overrun.
 */
import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { ChatCompletionMessageParam, ChatCompletionTool } from 'openai/resources/chat/completions';
import { describe, expect, it } from 'vitest';
import { ParentAgent } from '../../../src/main/session/parent-agent.js';
import { estimateTokens } from '../../../src/main/session/session.js';
import { estimateRequestTokens, TokenRatios } from '../../../src/shared/token-ratio.js';
import { tempWorkspace, testConfig, useCleanup } from '../../helpers/index.js';

const cleanup = useCleanup();
const CHARS_PER_TOKEN = 2;

async function body(req: IncomingMessage): Promise<string> {
  let text = '';
  for await (const chunk of req) text += String(chunk);
  return text;
}

/** A chat endpoint that answers every request at once and reports `prompt_tokens` as its body's characters ÷ 2. */
async function denseTokenizerEndpoint(): Promise<{
  url: string;
  sent: { messages: ChatCompletionMessageParam[]; tools: ChatCompletionTool[]; promptTokens: number }[];
}> {
  const sent: { messages: ChatCompletionMessageParam[]; tools: ChatCompletionTool[]; promptTokens: number }[] = [];
  const server = createServer((req, res) => {
    void body(req).then((text) => {
      const request = JSON.parse(text) as { messages: ChatCompletionMessageParam[]; tools?: ChatCompletionTool[]; model: string };
      const promptTokens = Math.ceil(text.length / CHARS_PER_TOKEN);
      sent.push({ messages: request.messages, tools: request.tools ?? [], promptTokens });
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(
        JSON.stringify({
          id: `c${sent.length}`,
          object: 'chat.completion',
          created: 0,
          model: request.model,
          choices: [
            {
              index: 0,
              finish_reason: 'stop',
              message: { role: 'assistant', content: `Answer ${sent.length}: ${'the tool loop stops at maxIterations. '.repeat(8)}` },
            },
          ],
          usage: { prompt_tokens: promptTokens, completion_tokens: 80, total_tokens: promptTokens + 80 },
        }),
      );
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  cleanup.add(() => new Promise<void>((resolve) => server.close(() => resolve())));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`, sent };
}

describe('token ratio learned from reported usage', () => {
  it("the parent's history is counted in the endpoint's tokens: the estimate moves toward the reported prompt tokens, and folding keeps the real count under the budget", async () => {
    const endpoint = await denseTokenizerEndpoint();
    const budget = 3_000;
    const config = testConfig({
      baseUrl: endpoint.url,
      workspaceRoot: tempWorkspace(undefined, cleanup),
      stream: false,
      parentHistoryMaxTokens: budget,
      tools: ['read_file'],
    });
    const agent = new ParentAgent({ config });
    await agent.runTurn('question 0: where does the tool loop stop?');
    // One reply is enough to move it: the text-kind estimate alone is far under the reported count.
    const first = endpoint.sent[0];
    expect(first).toBeDefined();
    const rawEstimate = estimateTokens(first!.messages);
    expect(rawEstimate).toBeLessThan(first!.promptTokens * 0.7);
    expect(agent.tokenRatios.ratio(config.model)).toBeGreaterThan(1.4);

    for (let turn = 1; turn < 40; turn++) {
      await agent.runTurn(`question ${turn}: where does the tool loop stop? ${'Context about retries and backoff. '.repeat(6)}`);
      // The count of a request tracks what the endpoint reports for it (within 15%).
      const last = endpoint.sent.at(-1)!;
      const counted = Math.ceil(estimateRequestTokens(last.messages, last.tools) * agent.tokenRatios.ratio(config.model));
      expect(Math.abs(counted - last.promptTokens) / last.promptTokens).toBeLessThan(0.15);
    }
    // Folding counted in the endpoint's tokens: late requests stay near the budget in the
    // endpoint's own count (the estimate alone would have let them grow to about twice it).
    expect(agent.session.foldedTurns).toBeGreaterThan(5);
    const late = endpoint.sent.slice(-10).map((s) => s.promptTokens);
    expect(Math.max(...late)).toBeLessThanOrEqual(budget * 1.4);
  }, 60_000);

  it('learns per model, ignores tiny or absurd reports, and settles within a few replies', () => {
    const ratios = new TokenRatios();
    expect(ratios.ratio('a')).toBe(1);
    ratios.observe('a', 10, 100); // too small to say anything
    ratios.observe('a', 1_000, 0); // no usage reported
    expect(ratios.ratio('a')).toBe(1);
    for (let i = 0; i < 6; i++) ratios.observe('a', 1_000, 1_300);
    expect(ratios.ratio('a')).toBeCloseTo(1.3, 1);
    expect(ratios.ratio('b')).toBe(1);
    ratios.observe('b', 1_000, 1_000_000); // clamped: not a count of this request
    expect(ratios.ratio('b')).toBe(4);
    expect(ratios.scale('a', 100)).toBe(Math.ceil(100 * ratios.ratio('a')));
  });
});
