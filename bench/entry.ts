import { realpathSync } from 'node:fs';
import { pathToFileURL } from 'node:url';

/** Whether the module at `moduleUrl` is the script node was started with (not imported by another). */
export function isEntry(moduleUrl: string): boolean {
  try {
    return process.argv[1] !== undefined && moduleUrl === pathToFileURL(realpathSync(process.argv[1])).href;
  } catch {
    return false;
  }
}
