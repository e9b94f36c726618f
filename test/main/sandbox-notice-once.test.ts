/**
 * The "bubblewrap is not usable here" notice is said once per process, not once per manager
 * (issue 36: `npm test` printed it 772 times). Managers on the main thread, bubblewrap made
 * unusable by a `bwrapPath` that does not exist.
 */
import { describe, expect, it } from 'vitest';
import { BackgroundManager } from '../../src/main/jobs/manager.js';
import { makeConfig, tempWorkspace, useCleanup } from '../helpers/index.js';

const cleanup = useCleanup();

describe('the no-sandbox notice', () => {
  it('three managers in one process, with and without a logger: one warning in all', () => {
    const warnings: string[] = [];
    const onWarning = (warning: Error & { code?: string }) => {
      if (warning.code === 'FORKPOOL_NO_SANDBOX') warnings.push(warning.message);
    };
    process.on('warning', onWarning);
    cleanup.add(() => void process.off('warning', onWarning));
    const logged: string[] = [];
    const logger = { warn: (msg: string) => logged.push(msg), info: () => {}, debug: () => {}, error: () => {}, child: () => logger } as never;
    const config = makeConfig(undefined, tempWorkspace({}, cleanup), {}, { bwrapPath: '/nonexistent/forkpool-test/bwrap', sandbox: 'auto' });
    const managers = [new BackgroundManager({ config }), new BackgroundManager({ config, logger }), new BackgroundManager({ config })];
    for (const manager of managers) cleanup.add(() => manager.close({ timeoutMs: 2_000 }));
    expect(managers.map((m) => m.sandbox.notice)).toEqual(Array(3).fill(expect.stringMatching(/bubblewrap is not usable here/)));
    return new Promise<void>((resolve) => setImmediate(resolve)).then(() => {
      // process.emitWarning is delivered on a later tick: wait one, then count.
      expect([...warnings, ...logged]).toHaveLength(1);
    });
  });
});
