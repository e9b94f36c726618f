#!/usr/bin/env node
/**
 * The `forkpool` command (package.json `bin`). It checks the Node.js version before it loads
 * the CLI: on an older Node one line says what is needed and the exit code is 2 (a usage
 * error), instead of a stack trace from whichever dependency failed first.
 */
import { unsupportedNodeMessage } from '../shared/node-version.js';

const problem = unsupportedNodeMessage(process.versions.node);
if (problem === undefined) {
  await import('./index.js');
} else {
  process.stderr.write(`${problem}\n`);
  process.exitCode = 2;
}
