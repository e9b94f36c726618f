import type { PermissionGate, PermissionRequest } from '../../shared/tools/types.js';

/** Asks a person whether a tool may run; `always` also records a grant for the session. */
export type PermissionAsker = (request: PermissionRequest) => Promise<'once' | 'always' | 'deny'>;

/**
 * The session's grants, shared by the parent and (over a port, see permission-service) by every
 * background job. Only the parent may ask a person; a job only reads what is granted.
 */
export class PermissionStore {
  readonly #granted = new Set<string>();

  constructor(granted: Iterable<string> = []) {
    for (const tool of granted) this.#granted.add(tool);
  }

  isGranted(tool: string): boolean {
    return this.#granted.has(tool);
  }

  grant(tool: string): void {
    this.#granted.add(tool);
  }

  revoke(tool: string): void {
    this.#granted.delete(tool);
  }

  granted(): string[] {
    return [...this.#granted].sort();
  }

  /** The parent's gate: grants first, then a person if one can be asked, else deny. */
  parentGate(asker?: PermissionAsker): PermissionGate {
    return {
      check: async (request) => {
        if (this.isGranted(request.tool)) return true;
        if (!asker) return false;
        const answer = await asker(request).catch(() => 'deny' as const);
        if (answer === 'always') this.grant(request.tool);
        return answer !== 'deny';
      },
    };
  }

  /** A gate that never asks: used in-process by background jobs (the inline executor). */
  backgroundGate(): PermissionGate {
    return { check: async (request) => this.isGranted(request.tool) };
  }
}
