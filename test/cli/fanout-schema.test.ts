/**
 * `forkpool fanout --schema FILE` (src/cli/schema-file.ts), a real process on the simulator:
 * every line's job answers with a value of the schema, printed as `data` in its JSON line and
 * kept in the ledger (`jobs show` prints it); a bad schema file exits 2 naming the file and what
 * is wrong, and starts nothing.
 */
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { useCleanup } from '../helpers/cleanup.js';
import { parseJsonLines, runCli } from '../helpers/cli.js';
import { tempWorkspace } from '../helpers/config.js';
import { startSim } from '../helpers/sim.js';

const SCHEMA = {
  type: 'object',
  properties: { file: { type: 'string' }, summary: { type: 'string', maxLength: 80 }, confidence: { type: 'number', minimum: 0, maximum: 1 } },
  required: ['file', 'summary', 'confidence'],
  additionalProperties: false,
};

describe('forkpool fanout --schema', () => {
  const cleanup = useCleanup();

  it('prints each job with its typed data, and jobs show reads it back from the ledger', async () => {
    const sim = await startSim(cleanup);
    const dir = tempWorkspace(
      {
        'ws/src/retry.ts': '// Retry with exponential backoff.\nexport function retryBackoff() {}\n',
        'ws/src/cache.ts': '// An LRU cache.\nexport class LruCache {}\n',
      },
      cleanup,
    );
    writeFileSync(
      path.join(dir, 'tasks.jsonl'),
      '{"task":"Where is the retry backoff?","label":"backoff"}\n{"task":"Where is the LRU cache?","label":"cache"}\n',
    );
    writeFileSync(path.join(dir, 'finding.json'), JSON.stringify(SCHEMA));
    const args = ['fanout', 'tasks.jsonl', '--no-progress', '--base-url', sim.url, '--workspace', 'ws', '--ledger', 'l.db', '--schema', 'finding.json'];
    const ran = await runCli(args, { cwd: dir, cleanup, env: { OPENAI_API_KEY: 'k' } });
    expect(ran.code, ran.stderr).toBe(0);
    const lines = parseJsonLines(ran.stdout).sort((a, b) => Number(a.line) - Number(b.line));
    expect(lines.map((l) => [l.label, l.status])).toEqual([
      ['backoff', 'ok'],
      ['cache', 'ok'],
    ]);
    expect(lines[0]?.data).toEqual({ file: 'src/retry.ts', summary: expect.stringMatching(/^Found .* backoff, retry\.$/), confidence: 0.5 });
    expect(lines[1]?.data).toMatchObject({ file: 'src/cache.ts' });
    // The result text is the value's JSON.
    expect(JSON.parse(String(lines[0]?.result))).toEqual(lines[0]?.data);

    const shown = await runCli(['jobs', 'show', 'bg-1', '--ledger', 'l.db'], { cwd: dir, cleanup });
    expect(shown.code, shown.stderr).toBe(0);
    expect(shown.stdout).toContain(`data: ${JSON.stringify(lines[0]?.data)}`);
  });

  it.each([
    ['missing.json', null, /--schema "missing\.json": cannot read it \(ENOENT\)/],
    ['broken.json', '{"type": "object",', /--schema "broken\.json": not JSON/],
    ['wrong.json', '{"type": "objekt"}', /--schema "wrong\.json": not a usable JSON Schema: Unsupported type: objekt/],
    ['list.json', '[1, 2]', /--schema "list\.json": expected a JSON Schema object, received an array/],
  ])('a bad schema file (%s) exits 2 naming the file and what is wrong, and runs nothing', async (name, content, message) => {
    const sim = await startSim(cleanup);
    const dir = tempWorkspace({ 'ws/a.txt': 'a\n' }, cleanup);
    writeFileSync(path.join(dir, 'tasks.jsonl'), '{"task":"Where is a?","label":"a"}\n');
    if (content !== null) writeFileSync(path.join(dir, name), content);
    const ran = await runCli(['fanout', 'tasks.jsonl', '--no-progress', '--base-url', sim.url, '--workspace', 'ws', '--schema', name], {
      cwd: dir,
      cleanup,
      env: { OPENAI_API_KEY: 'k' },
    });
    expect(ran.code, ran.stderr).toBe(2);
    expect(ran.stderr).toMatch(message);
    expect(sim.requestCount).toBe(0);
  });
});
