import { defineConfig } from 'vitest/config';

// Workers load the built files in dist/ (`npm test` builds first), so the real pool runs the
// same code a user gets. Tests that spawn threads or processes clean up after themselves.
export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 60_000,
    hookTimeout: 30_000,
    pool: 'forks',
    // Two cores: keep heavy worker-thread suites from starving each other.
    maxWorkers: 2,
    reporters: ['default'],
    // A host fault printed during a test (a stack overflow, an unhandled rejection, a
    // FORKPOOL_HOST_FAULT warning) fails it: see test/helpers/host-faults.ts.
    setupFiles: ['test/setup/host-faults.ts'],
  },
});
