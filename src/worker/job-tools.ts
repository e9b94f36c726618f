import { z } from 'zod';
import { ToolError } from '../shared/errors.js';
import { ALERT_MAX_CHARS, ALERT_SEVERITIES, type AlertSeverity } from '../shared/protocol.js';
import type { ToolDefinition } from '../shared/tools/types.js';

const alertArgs = z.strictObject({
  message: z.string().trim().min(1).max(ALERT_MAX_CHARS),
  severity: z.enum(ALERT_SEVERITIES).default('info'),
});

/**
 * core-agent's alerts: a job tells its parent something before it ends. The message crosses
 * the port at once; the parent sees it at its next turn boundary. At most `max` per job (the
 * main thread enforces the same bound: a worker is not trusted to count).
 */
export function reportAlertTool(send: (alert: { message: string; severity: AlertSeverity }) => void, max: number): ToolDefinition<z.output<typeof alertArgs>> {
  let sent = 0;
  return {
    name: 'report_alert',
    description: `Tell your parent something urgent now (at most ${max} times), not your final answer.`,
    parameters: alertArgs,
    gated: false,
    async run(args) {
      if (sent >= max)
        throw new ToolError('ALERT_LIMIT', 'report_alert', `you already sent ${max} alerts, the most a job may send; put the rest in your final answer`);
      sent++;
      send({ message: args.message, severity: args.severity });
      return `Alert ${sent} of at most ${max} sent to your parent (${args.severity}). Continue your task.`;
    },
  };
}
