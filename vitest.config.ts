import { globSync } from 'node:fs';
import { configDefaults, defineConfig } from 'vitest/config';

// Test files that share their worker process with the files before them (`isolate: false`): the
// test-side imports of src/ (transformed TypeScript, evaluated once per process instead of once per
// file) were a third of these files' CPU, and the suite is CPU-bound on CI's two cores. Only
// folders seen green that way, minus the files that patch globals (vi.mock, vi.spyOn, process.env):
// those stay isolated. test/setup/host-faults.ts already runs once per process.
const SHARED_PROCESS = ['test/server/**/*.test.ts', 'test/cli/**/*.test.ts', 'test/main/tools/**/*.test.ts', 'test/shared/**/*.test.ts'];
const PATCHES_GLOBALS = [
  'test/server/wait-bounds.test.ts',
  'test/shared/grep-blocking-reads.test.ts',
  'test/shared/process-tag.test.ts',
  'test/shared/tools.test.ts',
  'test/shared/typed-emitter.test.ts',
];
const sharedFiles = globSync(SHARED_PROCESS).filter((file) => !PATCHES_GLOBALS.includes(file));

// Workers load the built files in dist/ (`npm test` builds first), so the real pool runs the
// same code a user gets. Tests that spawn threads or processes clean up after themselves.
export default defineConfig({
  test: {
    testTimeout: 60_000,
    hookTimeout: 30_000,
    pool: 'forks',
    // Two cores: keep heavy worker-thread suites from starving each other.
    maxWorkers: 2,
    reporters: ['default'],
    // A host fault printed during a test (a stack overflow, an unhandled rejection, a
    // FORKPOOL_HOST_FAULT warning) fails it: see test/helpers/host-faults.ts.
    setupFiles: ['test/setup/host-faults.ts'],
    projects: [
      {
        extends: true,
        test: { name: 'shared', include: sharedFiles, isolate: false },
      },
      {
        extends: true,
        test: { name: 'isolated', include: ['test/**/*.test.ts'], exclude: [...configDefaults.exclude, ...sharedFiles] },
      },
    ],
  },
});
