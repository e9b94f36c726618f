/**
 * Prints how long each test file took, slowest first, from vitest's JSON report
 * (`--reporter=json --outputFile.json=FILE`): .ci/run calls it at the end of each leg.
 *
 *   node scripts/test-durations.mjs FILE [TITLE]
 *   node scripts/test-durations.mjs --failures FILE [TITLE]   only the failed tests, one line each
 *
 * .ci/run prints the failures of every failed leg again as its last lines, so that the tail of a
 * long CI log still names what failed.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';

const args = process.argv.slice(2);
const failuresOnly = args[0] === '--failures';
const [file, title = 'test files'] = failuresOnly ? args.slice(1) : args;
if (!file) {
  process.stderr.write('usage: node scripts/test-durations.mjs VITEST_JSON_REPORT [TITLE]\n');
  process.exit(2);
}
const report = JSON.parse(readFileSync(file, 'utf8'));
const root = process.cwd();
const failures = (report.testResults ?? []).flatMap((r) =>
  (r.assertionResults ?? [])
    .filter((a) => a.status === 'failed')
    .map(
      (a) =>
        `${path.relative(root, r.name)} > ${a.fullName}: ${String(a.failureMessages?.[0] ?? '')
          .split('\n')[0]
          .slice(0, 300)}`,
    )
    .concat(
      r.status === 'failed' && !(r.assertionResults ?? []).some((a) => a.status === 'failed')
        ? [
            `${path.relative(root, r.name)}: ${String(r.message ?? 'failed')
              .split('\n')[0]
              .slice(0, 300)}`,
          ]
        : [],
    ),
);
if (failuresOnly) {
  console.log(`failed on ${title}: ${failures.length}`);
  for (const line of failures) console.log(`  FAILED ${line}`);
  process.exit(0);
}
const rows = (report.testResults ?? []).map((r) => ({
  name: path.relative(root, r.name),
  seconds: Math.max(0, (r.endTime ?? 0) - (r.startTime ?? 0)) / 1000,
  tests: (r.assertionResults ?? []).length,
  status: r.status,
}));
rows.sort((a, b) => b.seconds - a.seconds);
const total = rows.reduce((sum, r) => sum + r.seconds, 0);
const width = Math.max(...rows.map((r) => r.name.length), 10);
console.log(`per-file durations, ${title} (${rows.length} files, ${total.toFixed(1)} s summed over ${report.numTotalTests ?? '?'} tests):`);
for (const r of rows)
  console.log(
    `  ${r.seconds.toFixed(1).padStart(7)} s  ${r.name.padEnd(width)}  ${String(r.tests).padStart(3)} tests${r.status === 'passed' ? '' : `  ${r.status}`}`,
  );
// The suite's closing line, in the plain form CI reads ("N passed, N failed, N skipped").
console.log(
  `tests: ${report.numPassedTests ?? 0} passed, ${report.numFailedTests ?? 0} failed, ${(report.numPendingTests ?? 0) + (report.numTodoTests ?? 0)} skipped`,
);
for (const line of failures) console.log(`  FAILED ${line}`);
