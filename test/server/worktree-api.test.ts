/**
 * `GET/POST /v1/jobs/{id}/worktree` and `workspace: "worktree"` on `POST /v1/jobs`, through the
 * real server, pool and sim (a scripted writing job) on a real git repository: the job writes on
 * its own branch, the API shows what it changed and merges it; every answer is checked against
 * the server's own `/openapi.json`.
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { useCleanup } from '../helpers/cleanup.js';
import { git, gitRepo, tempDir } from '../helpers/git-repo.js';
import { ApiContract, type OpenApiDoc } from '../helpers/openapi.js';
import { contractCalls, startTestServer } from '../helpers/server.js';

const cleanup = useCleanup();

describe('the worktree routes', () => {
  it('a writing job on its own branch: the API shows the files it changed and merges them; refusals are 404, 409 and 400', async () => {
    const root = gitRepo(cleanup, { prefix: 'forkpool-wt-api-', prune: true });
    const server = await startTestServer(
      cleanup,
      { workspaceRoot: root, grantedTools: ['write_file'], background: { maxConcurrent: 1, worktreeDir: tempDir(cleanup, 'forkpool-wt-dirs-') } },
      { script: [{ toolCalls: [{ name: 'write_file', arguments: { path: 'notes.md', content: 'found it\n' } }] }, { content: 'Wrote notes.md.' }] },
    );
    const { contract, call } = await contractCalls(server);

    const started = await call('/v1/jobs', { json: { task: 'Write what you found to notes.md.', label: 'writer', workspace: 'worktree' } }, 202);
    const id = started.jobs[0].id as string;
    expect((await call(`/v1/jobs/${id}/worktree`, {}, 200)).branch).toBe(`forkpool/${id}`);
    expect((await call(`/v1/jobs/${id}/result?wait=60`)).status).toBe('ok');
    const tree = await call(`/v1/jobs/${id}/worktree`, {}, 200);
    expect(tree).toMatchObject({ jobId: id, state: 'kept', changed: ['A notes.md'] });
    // Not in the workspace until merged.
    expect(existsSync(path.join(root, 'notes.md'))).toBe(false);
    await call(`/v1/jobs/${id}/worktree`, { json: { action: 'rebase' } }, 400);
    await call('/v1/jobs/bg-404/worktree', { json: { action: 'merge' } }, 404);
    await call('/v1/jobs/bg-404/worktree', {}, 404);
    const merged = await call(`/v1/jobs/${id}/worktree`, { json: { action: 'merge' } }, 200);
    expect(merged.worktree.state).toBe('merged');
    expect(readFileSync(path.join(root, 'notes.md'), 'utf8')).toBe('found it\n');
    expect(git(root, 'status', '--porcelain')).toBe('');
    // Done once: a second merge is a 409 naming why.
    expect((await call(`/v1/jobs/${id}/worktree`, { json: { action: 'drop' } }, 409)).error.code).toBe('WORKTREE_ACTION_FAILED');
    // The document's paths were all seen answering as it says.
    expect([...contract.seen]).toEqual(
      expect.arrayContaining(['getJobWorktree 200', 'getJobWorktree 404', 'actOnJobWorktree 200', 'actOnJobWorktree 404', 'actOnJobWorktree 409']),
    );
  }, 120_000);

  it('POST /v1/jobs in a dirty repository: the worktree task is refused up front (400, or beside an accepted task in `refused`), no job booked for it', async () => {
    const root = gitRepo(cleanup, { prefix: 'forkpool-wt-api-dirty-' });
    writeFileSync(path.join(root, 'README.md'), 'uncommitted\n');
    const trees = tempDir(cleanup, 'forkpool-wt-dirs-');
    const server = await startTestServer(
      cleanup,
      { workspaceRoot: root, grantedTools: ['write_file'], background: { maxConcurrent: 1, worktreeDir: trees } },
      { script: [{ content: 'Shared answer.' }] },
    );
    const contract = new ApiContract((await (await server.api('/openapi.json')).json()) as OpenApiDoc);
    const post = async (json: unknown, status: number) => {
      const response = await server.api('/v1/jobs', { json });
      const body = await contract.check('POST', '/v1/jobs', response, { stream: false });
      expect(response.status, JSON.stringify(body)).toBe(status);
      return body;
    };
    const alone = await post({ task: 'Write notes.', label: 'writer', workspace: 'worktree' }, 400);
    expect(alone.error).toMatchObject({
      code: 'WORKTREE_UNAVAILABLE',
      message: expect.stringMatching(/uncommitted changes \(M README\.md\).*nothing was started$/s),
    });
    const both = await post(
      {
        tasks: [
          { task: 'Answer.', label: 'shared' },
          { task: 'Write notes.', label: 'writer', workspace: 'worktree' },
        ],
      },
      202,
    );
    expect(both.jobs).toHaveLength(1);
    expect(both.refused).toEqual([expect.objectContaining({ index: 1, code: 'WORKTREE_UNAVAILABLE' })]);
    const list = await contract.check('GET', '/v1/jobs', await server.api('/v1/jobs'), { stream: false });
    expect(list.jobs.map((job: { label: string }) => job.label)).toEqual(['shared']);
    expect(git(root, 'branch', '--list', 'forkpool/*')).toBe('');
  }, 120_000);
});
