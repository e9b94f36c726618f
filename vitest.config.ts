import os from 'node:os';
import path from 'node:path';
import { defineConfig } from 'vitest/config';

// Node's on-disk compile cache (V8 code cache, keyed by Node version and file contents) for every
// process the suite starts: vitest's forks (one per test file), the CLI children, the doc
// examples, their worker threads. Each of them compiled vitest, the dependencies and dist/ afresh.
// Only how code is compiled changes, never what runs; a stale entry is ignored by Node.
const COMPILE_CACHE = path.join(os.tmpdir(), 'forkpool-test-compile-cache');

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
    // Set in the forks' environment when they start (so their own imports use it too) and
    // inherited by what they spawn. An explicit NODE_COMPILE_CACHE (or NODE_DISABLE_COMPILE_CACHE=1) wins.
    env: { NODE_COMPILE_CACHE: process.env.NODE_COMPILE_CACHE ?? COMPILE_CACHE },
    // A host fault printed during a test (a stack overflow, an unhandled rejection, a
    // FORKPOOL_HOST_FAULT warning) fails it: see test/helpers/host-faults.ts.
    setupFiles: ['test/setup/host-faults.ts'],
  },
});
