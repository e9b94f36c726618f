/**
 * The messages of one run on a `forkpool worker` (send_to_background_agent to a job on another
 * machine). They come three ways, and may come twice: in the job's spec (sent while it was
 * queued on the main side), from the launch's list in Redis (sent after; read as the run is
 * picked up, so a run that starts later, or runs again after a stall, is given them all), and on
 * the control channel (while it runs). Each is given to the run once, in order: before its
 * launch they go into the launch's spec; after it, to the job's port (as the local path does).
 */
import type { SteeringMessage } from '../../shared/protocol.js';
import { steeringWireSchema } from './wire.js';

export class RunSteering {
  readonly #given = new Set<number>();
  readonly #early: SteeringMessage[] = [];
  #post: ((message: SteeringMessage, interrupt: boolean) => void) | undefined;

  /** A message from the control channel or the launch's list (`interrupt` only matters once the run has started). */
  receive(message: SteeringMessage, interrupt: boolean): void {
    if (this.#given.has(message.id)) return;
    this.#given.add(message.id);
    if (this.#post) this.#post(message, interrupt);
    else this.#early.push(message);
  }

  /** The launch's list in Redis, as LRANGE gives it (a malformed entry is skipped: it came from outside). */
  receiveKept(entries: readonly string[]): void {
    for (const entry of entries) {
      let parsed;
      try {
        parsed = steeringWireSchema.safeParse(JSON.parse(entry));
      } catch {
        continue;
      }
      if (parsed.success) this.receive(parsed.data, false);
    }
  }

  /**
   * The run launches now: the messages its spec carries (`fromSpec`) and those that came before
   * it, each once, by id. From here on a message goes to `post`.
   */
  launch(fromSpec: readonly SteeringMessage[], post: (message: SteeringMessage, interrupt: boolean) => void): SteeringMessage[] {
    const all = new Map<number, SteeringMessage>();
    for (const message of [...fromSpec, ...this.#early]) all.set(message.id, message);
    for (const id of all.keys()) this.#given.add(id);
    this.#early.length = 0;
    this.#post = post;
    return [...all.values()].sort((a, b) => a.id - b.id);
  }
}
