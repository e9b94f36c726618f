/**
 * A ledger file inside the workspace is refused at config time (issue 18): every job's file
 * tools and bash could read every result in it and rewrite one, which `--resume` would print.
 * Resolved real paths (a symlink does not hide it); `ledger.allowInWorkspace` /
 * `--allow-ledger-in-workspace` forces it.
 */
import { existsSync, mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../../src/main/setup/config-load.js';
import { describeResult, makeWorkspace, parseJsonLines, runCli, startSim, tempWorkspace, useCleanup } from '../../helpers/index.js';

const TASKS = [1, 2].map((i) => JSON.stringify({ task: `Where is the tool loop? (placed ${i}.)` })).join('\n');

describe('a ledger inside the workspace', () => {
  it('fanout --ledger inside the workspace, or through a symlink into it, is refused (exit 2, the field, the real path, the flag that forces it) before the file is made; forced, it runs', async () => {
    const cleanup = useCleanup();
    const sim = await startSim(cleanup, { latencyMs: 5 });
    const workspace = await makeWorkspace(cleanup);
    const outside = tempWorkspace({}, cleanup);
    mkdirSync(path.join(workspace, 'state'));
    symlinkSync(path.join(workspace, 'state'), path.join(outside, 'link'));
    const base = ['fanout', '-', '--base-url', sim.url, '--workspace', workspace, '--no-progress'];

    const direct = await runCli([...base, '--ledger', path.join(workspace, 'run.db')], { input: TASKS, cleanup });
    expect(direct.code, describeResult(direct)).toBe(2);
    expect(direct.stderr).toContain('config field "ledger.path" (from flag --ledger): expected a file outside the workspace');
    expect(direct.stderr).toContain('--allow-ledger-in-workspace');
    expect(direct.stderr).toContain(`inside the workspace ${workspace}`);
    expect(direct.stderr, 'names a place that works (issue 36)').toContain(`such as ${path.join(os.homedir(), '.forkpool', 'run.db')}`);
    expect(direct.stdout).toBe('');
    expect(existsSync(path.join(workspace, 'run.db'))).toBe(false);

    const linked = path.join(outside, 'link', 'run.db');
    const viaLink = await runCli([...base, '--ledger', linked], { input: TASKS, cleanup });
    expect(viaLink.code, describeResult(viaLink)).toBe(2);
    expect(viaLink.stderr).toContain(`${linked}, really ${path.join(workspace, 'state', 'run.db')}, inside the workspace`);
    expect(existsSync(path.join(workspace, 'state', 'run.db'))).toBe(false);

    const forced = await runCli([...base, '--ledger', path.join(workspace, 'run.db'), '--allow-ledger-in-workspace'], { input: TASKS, cleanup });
    expect(forced.code, describeResult(forced)).toBe(0);
    expect(parseJsonLines(forced.stdout)).toHaveLength(2);
  }, 60_000);

  it('the README shape, a config file in the workspace naming "forkpool.db": refused naming the file it came from; a ledger beside the workspace is accepted', async () => {
    const cleanup = useCleanup();
    const sim = await startSim(cleanup, { latencyMs: 5 });
    const workspace = tempWorkspace({}, cleanup);
    const configFile = path.join(workspace, 'forkpool.config.json');
    writeFileSync(configFile, JSON.stringify({ ledger: { path: 'forkpool.db' } }));
    // The workspace is the working directory, as in the README's quick start.
    const r = await runCli(['fanout', '-', '--base-url', sim.url, '--no-progress'], { input: TASKS, cwd: workspace, cleanup });
    expect(r.code, describeResult(r)).toBe(2);
    expect(r.stderr).toContain(`config field "ledger.path" (from ${configFile}): expected a file outside the workspace`);
    expect(existsSync(path.join(workspace, 'forkpool.db'))).toBe(false);
    const inCode = () => loadConfig({ config: { workspaceRoot: workspace, ledger: { path: path.join(workspace, 'deep', 'er', 'x.db') } } });
    expect(inCode).toThrow(expect.objectContaining({ code: 'CONFIG_INVALID', issues: [expect.objectContaining({ field: 'ledger.path' })] }));
    expect(
      loadConfig({ config: { workspaceRoot: workspace, ledger: { path: path.join(workspace, 'x.db'), allowInWorkspace: true } } }).ledger.allowInWorkspace,
    ).toBe(true);
    // A sibling whose name starts like the workspace is not inside it.
    expect(loadConfig({ config: { workspaceRoot: workspace, ledger: { path: `${workspace}-state/x.db` } } }).ledger.path).toBe(`${workspace}-state/x.db`);
  });
});
