/**
 * System packages some tests need (bubblewrap, Chromium, tmux, redis-server). On a machine without
 * one, the tests that need it are skipped and one line says which package is missing and how to
 * install it, so `npm test` passes on a fresh machine with Node alone. `.ci/run` installs every
 * package and sets FORKPOOL_TEST_REQUIRE_SYSTEM=1, which turns each such skip into a failure.
 */
import { spawnSync } from 'node:child_process';

/** Set by `.ci/run`: a missing system package fails the run instead of skipping its tests. */
export const REQUIRE_SYSTEM = process.env.FORKPOOL_TEST_REQUIRE_SYSTEM === '1';

const reported = new Set<string>();

/**
 * True when the tests that need `pkg` should be skipped: it is missing and this is not CI. Says so
 * once per test file. Under FORKPOOL_TEST_REQUIRE_SYSTEM=1 it returns false even when missing,
 * so those tests run and fail with their own error.
 */
export function skipWithout(pkg: string, available: boolean, install = `apt-get install ${pkg}`): boolean {
  if (available) return false;
  if (REQUIRE_SYSTEM) {
    process.stderr.write(`forkpool tests: ${pkg} is missing and FORKPOOL_TEST_REQUIRE_SYSTEM=1, so the tests that need it run and fail (${install})\n`);
    return false;
  }
  if (!reported.has(pkg)) {
    reported.add(pkg);
    process.stderr.write(`forkpool tests: skipped the tests that need ${pkg}: not installed here (${install})\n`);
  }
  return true;
}

/** True when `command args…` runs and exits 0 (a quick, synchronous probe). */
export function runs(command: string, args: readonly string[]): boolean {
  return spawnSync(command, args, { stdio: 'ignore', timeout: 10_000 }).status === 0;
}
