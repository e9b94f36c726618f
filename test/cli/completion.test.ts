/**
 * `forkpool completion bash|zsh|fish`: the bash script, sourced in a real bash, completes the
 * commands, each command's own options and an option's choices (all read from the program, so
 * a new option is completed without editing the script); fish's names the same options; an
 * unknown shell is a usage error.
 */
import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { useCleanup } from '../helpers/cleanup.js';
import { describeResult, runCli } from '../helpers/cli.js';
import { tempWorkspace } from '../helpers/config.js';

const cleanup = useCleanup();

/** What bash's completion function offers for `words` (the last one being completed). */
function complete(script: string, words: string[]): string[] {
  const dir = tempWorkspace({}, cleanup);
  const file = path.join(dir, 'forkpool.bash');
  writeFileSync(file, script);
  const driver = `source ${JSON.stringify(file)}; COMP_WORDS=(${words.map((w) => `'${w}'`).join(' ')}); COMP_CWORD=${words.length - 1}; _forkpool; printf '%s\\n' "\${COMPREPLY[@]}"`;
  const r = spawnSync('bash', ['-c', driver], { cwd: dir, encoding: 'utf8' });
  expect(r.status, r.stderr).toBe(0);
  return r.stdout.split('\n').filter(Boolean);
}

describe('forkpool completion', () => {
  it('bash: commands, options per command, and an option’s choices', async () => {
    const r = await runCli(['completion', 'bash']);
    expect(r.code, describeResult(r)).toBe(0);
    expect(complete(r.stdout, ['forkpool', 'fa'])).toEqual(['fanout']);
    expect(complete(r.stdout, ['forkpool', ''])).toEqual(expect.arrayContaining(['run', 'chat', 'fanout', 'serve', 'init', 'completion']));
    expect(complete(r.stdout, ['forkpool', 'fanout', '--res'])).toEqual(['--resume']);
    // --demo is run's, not fanout's.
    expect(complete(r.stdout, ['forkpool', 'run', '--de'])).toEqual(['--demo']);
    expect(complete(r.stdout, ['forkpool', 'fanout', '--de'])).toEqual([]);
    expect(complete(r.stdout, ['forkpool', 'fanout', '--isolation', ''])).toEqual(['thread', 'shared']);
    expect(complete(r.stdout, ['forkpool', 'fanout', '--executor', 'b'])).toEqual(['bullmq']);
  });

  it('zsh loads it through bashcompinit; fish names the same options; an unknown shell exits 2', async () => {
    const zsh = await runCli(['completion', 'zsh']);
    expect(zsh.stdout).toMatch(/^autoload -U \+X bashcompinit && bashcompinit\n# forkpool completion for bash/);
    const fish = await runCli(['completion', 'fish']);
    expect(fish.stdout).toContain("complete -c forkpool -n '__fish_seen_subcommand_from fanout' -l resume");
    expect(fish.stdout).toContain("-l isolation -xa 'thread shared'");
    const bad = await runCli(['completion', 'tcsh']);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('forkpool completion: expects one of bash, zsh, fish; received "tcsh"');
  });
});
