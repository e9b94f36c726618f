/**
 * Which sampling and length fields a request carries, per model. OpenAI's reasoning models (o1,
 * o3, o4-mini, gpt-5 and their dated or provider-prefixed names) refuse `temperature` (400
 * "Unsupported parameter") and, on Chat Completions, `max_tokens` (they take
 * `max_completion_tokens`); Anthropic refuses a `temperature` beside `thinking`. An unset
 * temperature is then left out; one the user set is always sent (their server, their call).
 */
import { DEFAULTS } from '../defaults.js';

/** Whether `model` names one of OpenAI's reasoning models (`o3`, `o4-mini`, `gpt-5-mini`, `openai/gpt-5`). */
export function isReasoningModel(model: string): boolean {
  const name = (model.split('/').at(-1) ?? '').toLowerCase();
  return /^(o\d+(?:$|-)|gpt-5)/.test(name);
}

/**
 * The `temperature` field of a request: the configured one when set; unset, {@link DEFAULTS}'
 * 0 unless `refused` (a reasoning model, Anthropic thinking), then none.
 */
export function temperatureField(configured: number | undefined, refused: boolean): { temperature?: number } {
  if (configured !== undefined) return { temperature: configured };
  return refused ? {} : { temperature: DEFAULTS.temperature };
}
