/** One line of a fan-out's input: its task, or the problem with it. */
import { z } from 'zod';
import { budgetLimitsSchema, type BudgetLimits } from '../shared/budget.js';
import { oneLine, preview } from '../main/views/terminal-lines.js';

const lineSchema = z.strictObject({
  task: z.string().trim().min(1, 'task must be a non-empty string'),
  label: z.string().max(200).optional(),
  agent: z.string().min(1).optional(),
  /** Tighter budgets than the agent's (see docs/delivery.md "Budgets"). */
  budget: budgetLimitsSchema.optional(),
});

export interface FanoutTask {
  line: number;
  task: string;
  label: string;
  agent?: string | undefined;
  budget?: BudgetLimits | undefined;
}

/**
 * One input line as a task, `undefined` for a blank line, or the problem with it. The
 * problem never quotes the line raw: a short escaped preview only, so binary or terminal
 * control sequences in the input never reach the terminal.
 */
export function parseLine(text: string, line: number): FanoutTask | { problem: string } | undefined {
  if (!text.trim()) return undefined;
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (error) {
    // V8's message may quote the input ("… "xyz" is not valid JSON"): keep only the diagnosis.
    const reason = (error as Error).message.replace(/,?\s*(?:\.\.\.)?"[\s\S]*"(?:\.\.\.)?\s*is not valid JSON$/, '');
    return { problem: `not valid JSON (${oneLine(reason, 80)}): ${preview(text)}` };
  }
  const parsed = lineSchema.safeParse(raw);
  if (!parsed.success) return { problem: `${oneLine(z.prettifyError(parsed.error), 200)}: ${preview(text)}` };
  return { line, task: parsed.data.task, label: parsed.data.label ?? `line ${line}`, agent: parsed.data.agent, budget: parsed.data.budget };
}
