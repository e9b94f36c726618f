/**
 * Shared test helpers. Import from here:
 *   import { useCleanup, startTestSim, testConfig, tempWorkspace, runCli, ... } from './helpers/index.js';
 *
 * - cleanup.ts  useCleanup / createCleanup (per-test teardown list), cleanupOf (one test's, for concurrent tests), waitFor (poll a condition)
 * - config.ts   tempWorkspace (temp dir with files), makeWorkspace (the research task's files), testConfig
 *               (parsed config with test defaults)
 * - sim.ts      startSim (a sim server closed after the test), startTestSim (+ config + model client)
 * - cli.ts      runCli / spawnCli (the built CLI as a child process), parseJsonLines, cliEnv
 * - history.ts  assertValidHistory (tool calls all answered), toolResults (of a message list)
 * - requests.ts readers of the sim's request log: messagesOf, systemOf, toolNames, toolSchema,
 *               requestsForTask, runsOf, toolMessagesOf, toolResultsSent
 * - agents.ts   agentConfig (makeConfig with a scout and a reviewer peer), SCOUT_PROMPT
 * - ledger.ts   ledgerFile (a temp ledger path), okEnding, RawDatabase (the SQLite file, raw)
 * - gates.ts    allowGate / denyGate / recordingGate (PermissionGate doubles), toolContextFor
 * - pool.ts     the real pool: makeConfig, makeManager (+ the shared after-each check that no
 *               manager listener threw), nextEvent, ended, startedJob, recordEvents
 * - faults.ts   runOneJob, loopback stand-ins (status server, recording proxy), /proc checks
 * - fake-executor.ts  FakeExecutor (scripted port protocol), ManualScheduler (timers by hand)
 * - tmux.ts     startTmux: a real terminal (private tmux server) for the chat's end-to-end tests
 * - redis.ts    startRedis (a private redis-server, restartable), startWorker (`forkpool worker` processes),
 *               startBullmqPair (a producer and a worker process on one queue)
 * - sandbox.ts  bubblewrap skips, toolContext / callTool / toolError for calling a tool directly,
 *               markerSleep + processesRunning (find a command's processes by exact argv)
 * - system.ts   skipWithout (a missing system package skips, or fails under FORKPOOL_TEST_REQUIRE_SYSTEM)
 * - small-disk.ts  mountSmallDisk: a small tmpfs to fill (a real full disk) and free again
 * - git-repo.ts  git (test identity), tempDir (real path, removed after), gitRepo (a committed
 *               repository), commitBase, pruneWorktreesAfter
 * - host-faults.ts  the suite-wide host-fault check's book: allowHostFaults (a test's opt-out), noteHostOutput
 * - logs.ts     capturedLogger: a real pino logger whose JSON lines are kept in memory
 * - server.ts   NOT re-exported here (it loads fastify): import '../helpers/server.js' for
 *               startTestServer, TOKEN, readEvents, parsePrometheus
 * - tracing.ts  NOT re-exported here (it loads the OpenTelemetry SDK): useInMemoryTracer
 *
 * One `waitFor` (cleanup.ts, polls a condition); manager events are awaited with `nextEvent`.
 * A file that needs no pool (the CLI's, which run child processes) imports cli.ts, cleanup.ts,
 * config.ts and sim.ts directly: this index loads pool.ts and with it all of src/main per file.
 * One cleanup list: `const cleanup = useCleanup()` at the top of a file (or in a test).
 */
export * from './cleanup.js';
export * from './logs.js';
export * from './config.js';
export * from './sim.js';
export * from './cli.js';
export * from './history.js';
export * from './gates.js';
export * from './pool.js';
export * from './faults.js';
export * from './fake-executor.js';
export * from './tmux.js';
export * from './redis.js';
export * from './requests.js';
export * from './agents.js';
export * from './ledger.js';
export * from './sandbox.js';
export * from './system.js';
export * from './host-faults.js';
export * from './small-disk.js';
export * from './git-repo.js';
