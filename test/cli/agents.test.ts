/**
 * User-started jobs choose their agent from the CLI: `fanout --agent`, a line's `agent`, and
 * `background_agent` in the config file (the built CLI in a child process, build first).
 */
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { startSimServer } from '../../src/sim/index.js';
import { useCleanup } from '../helpers/cleanup.js';
import { describeResult, parseJsonLines, runCli, jsonl } from '../helpers/cli.js';
import { tempWorkspace } from '../helpers/config.js';

const cleanup = useCleanup();
const AGENTS = {
  scout: { description: 'finds things', model: 'scout-model', tools: ['grep', 'find_files'], apiKey: 'sk-peer-secret-4f9e2d7c1b' },
  reviewer: { description: 'reviews', model: 'reviewer-model' },
};

describe('fanout picks agents', () => {
  it('--agent for every line, a line naming its own, background_agent by default; an unknown --agent is a usage error', async () => {
    const server = await startSimServer({ recordBodies: true });
    cleanup.add(() => server.close());
    const cwd = tempWorkspace({ 'src/loop.ts': 'export function toolLoop() {}\n' }, cleanup);
    writeFileSync(path.join(cwd, 'forkpool.config.json'), JSON.stringify({ agents: AGENTS, background_agent: 'reviewer' }));
    const lines = [
      { task: 'Where is the tool loop?', label: 'a' },
      { task: 'Where is the tool loop defined?', label: 'b', agent: 'reviewer' },
    ];

    const flagged = await runCli(['fanout', '--json', '--log-level', 'debug', '--base-url', server.url, '--agent', 'scout', '-'], {
      cwd,
      input: jsonl(lines),
      cleanup,
    });
    expect(flagged.code, describeResult(flagged)).toBe(0);
    // The peer's key reaches its endpoint and nowhere else: not in events, results or logs.
    expect(flagged.stdout + flagged.stderr).not.toContain('sk-peer-secret-4f9e2d7c1b');
    const byLabel = Object.fromEntries(parseJsonLines(flagged.stdout).map((e) => [e.label, e]));
    expect(byLabel.a).toMatchObject({ agent: 'scout', usage: { 'scout-model': expect.any(Object) } });
    expect(byLabel.b).toMatchObject({ agent: 'reviewer', usage: { 'reviewer-model': expect.any(Object) } });

    const defaulted = await runCli(['fanout', '--base-url', server.url, '-'], { cwd, input: jsonl([lines[0]]), cleanup });
    expect(parseJsonLines(defaulted.stdout)[0]).toMatchObject({ agent: 'reviewer' });

    const unknown = await runCli(['fanout', '--base-url', server.url, '--agent', 'ghost', '-'], { cwd, input: jsonl(lines), cleanup });
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toMatch(/--agent expects one of the configured agents \(scout, reviewer\); received "ghost"/);
  });
});

describe('chat picks the agent of your own jobs', () => {
  it('--agent NAME runs /bg start as it; unknown is a usage error naming the configured ones; without it, piped stdin says the fork fallback', async () => {
    const server = await startSimServer({ recordBodies: true });
    cleanup.add(() => server.close());
    const cwd = tempWorkspace({ 'src/loop.ts': 'export function toolLoop() {}\n' }, cleanup);
    writeFileSync(path.join(cwd, 'forkpool.config.json'), JSON.stringify({ agents: AGENTS }));
    const input = '/bg start Where is the tool loop?\n';

    const flagged = await runCli(['chat', '--base-url', server.url, '--agent', 'scout'], { cwd, input, cleanup });
    expect(flagged.code, describeResult(flagged)).toBe(0);
    expect(flagged.stderr).toContain('your background jobs (/bg start, Ctrl+Enter) run as agent scout (--agent)');
    expect(flagged.stderr).toContain('● bg-1 [scout] "Where is the tool loop?" started by you');
    expect(server.requests.some((r) => JSON.stringify(r.body).includes('scout-model'))).toBe(true);

    const unknown = await runCli(['chat', '--base-url', server.url, '--agent', 'ghost'], { cwd, input, cleanup });
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toMatch(/--agent expects one of the configured agents \(scout, reviewer\); received "ghost"/);

    const piped = await runCli(['chat', '--base-url', server.url], { cwd, input, cleanup });
    expect(piped.code, describeResult(piped)).toBe(0);
    expect(piped.stderr).toContain('no --agent and no background.defaultAgent: your jobs run as a fork of the parent (configured agents: scout, reviewer;');
  });
});
