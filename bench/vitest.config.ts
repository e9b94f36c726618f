import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

// `npm run bench:test`: the bench's own tests (bench/test/), not part of `npm test`. Like the
// library's tests they load built files: the library from dist/ (`#dist/…`, `forkpool…`) and the
// bench's child processes from dist-bench/ (`npm run bench:build` first).
export default defineConfig({
  test: {
    root: fileURLToPath(new URL('..', import.meta.url)),
    include: ['bench/test/**/*.test.ts'],
    testTimeout: 60_000,
    hookTimeout: 30_000,
    pool: 'forks',
    maxWorkers: 2,
    reporters: ['default'],
    setupFiles: ['test/setup/host-faults.ts'],
  },
});
