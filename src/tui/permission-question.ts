/**
 * The parent's permission question on the chat's screen: one at a time (a new one denies the
 * one still open), answered once, said in the transcript.
 */
import type { PermissionRequest } from '../shared/tools/types.js';
import { escapeForTerminal } from '../main/views/terminal-lines.js';

export type PermissionAnswer = 'once' | 'always' | 'deny';

export class PermissionQuestion {
  #open: { request: PermissionRequest; resolve: (answer: PermissionAnswer) => void } | undefined;
  readonly #say: (text: string) => void;
  readonly #changed: () => void;

  constructor(say: (text: string) => void, changed: () => void) {
    this.#say = say;
    this.#changed = changed;
  }

  /** The question waiting for an answer. */
  get request(): PermissionRequest | undefined {
    return this.#open?.request;
  }

  /** Shows the question and waits for {@link answer}. */
  ask(request: PermissionRequest): Promise<PermissionAnswer> {
    this.#open?.resolve('deny');
    return new Promise((resolve) => {
      const entry = {
        request,
        resolve: (answer: PermissionAnswer) => {
          if (this.#open !== entry) return;
          this.#open = undefined;
          const said = answer === 'once' ? 'allowed once' : answer === 'always' ? 'allowed for this session' : 'denied';
          this.#say(`  ${escapeForTerminal(request.tool)}: ${said}`);
          resolve(answer);
        },
      };
      this.#open = entry;
      this.#changed();
    });
  }

  answer(answer: PermissionAnswer): void {
    this.#open?.resolve(answer);
  }
}
