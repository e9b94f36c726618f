/** The alert buffer's default bound is the seed's 256 (issue 38, B13). */
import { describe, expect, it } from 'vitest';
import { TurnInputs } from '../../../src/main/session/turn-inputs.js';
import { parseConfig } from '../../../src/shared/config.js';
import type { JobAlert } from '../../../src/main/jobs/manager.js';

describe('alert buffer', () => {
  it('a config that does not set background.alertBufferMax holds 256 alerts for the next turn, then drops the oldest', () => {
    const config = parseConfig({ workspaceRoot: '/tmp' });
    expect(config.background.alertBufferMax).toBe(256);
    const dropped: JobAlert[] = [];
    // The buffer never reads the manager or the deliveries: only the config's bound.
    const inputs = new TurnInputs({ manager: {} as never, deliveries: {} as never, config, onAlertDropped: (alert) => dropped.push(alert) });
    const alert = (n: number): JobAlert => ({ jobId: `bg-${n}`, label: `job ${n}`, message: `alert ${n}`, severity: 'info', number: 1, at: n });
    for (let n = 1; n <= 256; n++) inputs.addAlert(alert(n));
    expect(dropped).toEqual([]);
    inputs.addAlert(alert(257));
    expect(dropped.map((a) => a.jobId)).toEqual(['bg-1']);
  });
});
