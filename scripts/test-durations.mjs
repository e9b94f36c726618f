/**
 * Prints how long each test file took, slowest first, from vitest's JSON report
 * (`--reporter=json --outputFile.json=FILE`): .ci/run calls it at the end of each leg.
 *
 *   node scripts/test-durations.mjs FILE [TITLE]
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';

const [file, title = 'test files'] = process.argv.slice(2);
if (!file) {
  process.stderr.write('usage: node scripts/test-durations.mjs VITEST_JSON_REPORT [TITLE]\n');
  process.exit(2);
}
const report = JSON.parse(readFileSync(file, 'utf8'));
const root = process.cwd();
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
for (const r of rows) console.log(`  ${r.seconds.toFixed(1).padStart(7)} s  ${r.name.padEnd(width)}  ${String(r.tests).padStart(3)} tests${r.status === 'passed' ? '' : `  ${r.status}`}`);
// The suite's closing line, in the plain form CI reads ("N passed, N failed, N skipped").
console.log(`tests: ${report.numPassedTests ?? 0} passed, ${report.numFailedTests ?? 0} failed, ${(report.numPendingTests ?? 0) + (report.numTodoTests ?? 0)} skipped`);
