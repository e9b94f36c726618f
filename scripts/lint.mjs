#!/usr/bin/env node
// `npm run lint`: ESLint and Prettier side by side (they share nothing). ESLint's typed program is
// one thread and the longer of the two (about 33 s cold on two cores, Prettier about 13 s using 1.5
// cores): Prettier runs at a lower priority so it takes the spare core, not ESLint's (cold, side by
// side: `npm run lint` 45.7 s at equal priority, 34.9 s so). Each one's output is printed whole, in order, once it is
// done; the exit code is non-zero when either fails.
import { spawn } from 'node:child_process';
import { setPriority } from 'node:os';

const run = (script, niceness = 0) =>
  new Promise((resolve) => {
    const child = spawn(process.platform === 'win32' ? 'npm.cmd' : 'npm', ['run', '--silent', script], { stdio: ['ignore', 'pipe', 'pipe'] });
    // Inherited by the npm child's own children (prettier); a system that refuses it only loses the speed.
    if (niceness !== 0 && child.pid !== undefined) {
      try {
        setPriority(child.pid, niceness);
      } catch {
        // not allowed here: both run at the same priority
      }
    }
    let output = '';
    child.stdout.on('data', (chunk) => (output += chunk));
    child.stderr.on('data', (chunk) => (output += chunk));
    child.on('close', (code) => resolve({ script, code: code ?? 1, output }));
  });

const results = await Promise.all([run('lint:eslint'), run('lint:format', 10)]);
for (const { script, code, output } of results) {
  process.stdout.write(`> ${script}${code === 0 ? '' : ` FAILED (exit ${code})`}\n${output}`);
}
process.exitCode = results.some((r) => r.code !== 0) ? 1 : 0;
