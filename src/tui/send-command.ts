import { oneLine } from '../main/views/terminal-lines.js';
import type { ParentControls } from '../main/jobs/manager.js';

export const SEND_HELP_LINES = [
  '/bg send <id|name> <text>       send a live job a message (it reads it before its next model call)',
  '/bg interrupt <id|name> <text>  the same, and cancel its model call in flight so it reads it now',
];

/**
 * `/bg send` and `/bg interrupt`: a message to a live job (ParentControls.send). A refusal (an
 * ended job names its state) is thrown and shown as the command's error line.
 */
export function sendCommand(controls: Pick<ParentControls, 'send'>, args: string, interrupt: boolean, say: (text: string) => void): void {
  const match = /^(\S+)\s+([\s\S]+)$/.exec(args.trim());
  if (!match) return say(`usage: /bg ${interrupt ? 'interrupt' : 'send'} <id|name> <message>`);
  const [, target = '', text = ''] = match;
  const receipt = controls.send(target, text, { interrupt });
  const when =
    receipt.delivery === 'kept'
      ? `kept: it is ${receipt.state === 'suspended' ? 'waiting for its children' : 'queued'} and gets it when it runs`
      : interrupt
        ? 'its model call was interrupted; it reads it now'
        : 'it reads it before its next model call';
  say(`message ${receipt.message} to ${receipt.jobId} "${oneLine(receipt.label, 60)}": ${when}`);
}
