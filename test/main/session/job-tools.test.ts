/**
 * The parent's view of its jobs and what jobs tell it, through the real pool: names, list and
 * check read from the ledger (check's reading is the delivery: never injected twice),
 * restart, and alerts that reach the parent before the result, capped per job.
 */
import { describe, expect, it } from 'vitest';
import { AgentSession, type SessionEvents } from '../../../src/main/session/agent-session.js';
import { inspectTools } from '../../../src/main/session/inspect-tools.js';
import type { JobAlert } from '../../../src/main/jobs/manager.js';
import { createModelClient } from '../../../src/shared/model-call.js';
import { BACKGROUND_RESULTS_OPEN } from '../../../src/shared/prompts.js';
import type { ToolDefinition } from '../../../src/shared/tools/types.js';
import {
  messagesOf,
  useCleanup,
  RESEARCH_TASK,
  ended,
  fixtureExecutor,
  makeConfig,
  makeManager,
  makeWorkspace,
  startSim,
  startedJob,
  nextEvent,
} from '../../helpers/index.js';
import { Deliveries } from '../../../src/main/delivery/deliveries.js';

const cleanups = useCleanup();

const noContext = { workspaceRoot: '/', limits: {} as never, signal: new AbortController().signal, permissions: { check: async () => false }, env: {} };
const run = (tool: ToolDefinition | undefined, args: Record<string, unknown>) => (tool as ToolDefinition).run(args, noContext);

describe('named jobs', () => {
  it('a name is unique among live jobs, usable for cancel and restart, and free again once its job ends', async () => {
    const root = await makeWorkspace(cleanups);
    const config = makeConfig(undefined, root, { maxConcurrent: 2, cancelGraceMs: 100 });
    const manager = makeManager(config, cleanups, fixtureExecutor(config, cleanups));
    const first = manager.spawn({ task: 'FAULT:slow:60000', label: 'first', name: 'alpha' });
    expect(() => manager.spawn({ task: 'FAULT:slow:60000', label: 'second', name: 'alpha' })).toThrow(new RegExp(`"alpha" belongs to job ${first.id}`));
    expect(manager.jobs()).toHaveLength(1);
    expect(manager.find('alpha')?.id).toBe(first.id);
    await startedJob(manager, first.id);
    manager.cancel('alpha');
    const cancelled = await ended(manager, first.id);
    expect(cancelled.status).toBe('cancelled');
    const again = manager.spawn({ task: 'FAULT:slow:10', label: 'again', name: 'alpha' });
    expect(manager.find('alpha')?.id).toBe(again.id);
    expect((await ended(manager, again.id)).status).toBe('ok');
    // Restarting by name: the same id runs again.
    const restarted = manager.restart('alpha');
    expect(restarted).toMatchObject({ id: again.id, state: 'queued' });
    const second = await ended(manager, again.id);
    expect(second.status).toBe('ok');
    expect(second.notes.join('\n')).toMatch(/restarted on request/);
  });
});

describe('list and check through a session', () => {
  it("list and check agree with the ledger; check's reading is the delivery, so the next turn does not inject it; a re-check with nothing new is refused", async () => {
    const root = await makeWorkspace(cleanups);
    const jobsSim = await startSim(cleanups);
    const parentSim = await startSim(cleanups, { script: [{ content: 'turn one' }] });
    const config = makeConfig(jobsSim, root);
    const session = new AgentSession({
      config,
      closeExecutor: true,
      client: createModelClient({ baseUrl: parentSim.url, apiKey: 'k', requestTimeoutMs: 10_000 }),
    });
    cleanups.add(() => session.close({ timeoutMs: 2_000 }));
    // Wave 99 is never sealed: nothing here starts a follow-up on its own.
    const checked = session.manager.spawn({ task: RESEARCH_TASK, label: 'checked job', name: 'checked', wave: 99 });
    const other = session.manager.spawn({ task: 'Where is the LruCache class defined? Answer from the files in the workspace.', label: 'other job', wave: 99 });
    await Promise.all([ended(session.manager, checked.id), ended(session.manager, other.id)]);

    const tools = inspectTools({
      manager: session.manager,
      deliveries: session.deliveries,
      activity: session.activity,
      currentTurn: () => 7,
      cooldownMs: 60_000,
      resultMaxChars: 2_000,
    });
    const [list, check] = [tools.find((t) => t.name === 'list_background_agents'), tools.find((t) => t.name === 'check_background_agent')];
    const before = await run(list, {});
    expect(before).toMatch(/^2 background job\(s\): 0 running, 0 queued, 2 ended\./);
    for (const job of session.manager.jobs()) expect(before).toContain(`- ${job.id} (`);
    expect(before.match(/result not yet delivered/g)).toHaveLength(2);

    const detail = await run(check, { job_id: 'checked' });
    expect(detail).toContain(`Job ${checked.id} "checked job" (name "checked")`);
    expect(detail).toMatch(/Last tool calls: .*(find_files|grep)/);
    expect(detail).toMatch(/now delivered in turn 7/);
    expect(detail).toContain('retry.ts');
    expect(session.manager.get(checked.id)?.deliveredInTurn).toBe(7);
    await expect(run(check, { job_id: checked.id })).rejects.toThrow(/checked 0\.\d s ago and nothing changed/);
    const after = await run(list, {});
    expect(after).toContain(`- ${checked.id} (name "checked", fork): ended ok, delivered in turn 7`);
    await expect(run(check, { job_id: 'nobody' })).rejects.toThrow(/no background job with id or name "nobody"/);

    // The next turn's preamble carries the other job only.
    await session.submit('next');
    const input = String(messagesOf(parentSim.requests[0]!).at(-1)?.content);
    expect(input).toContain(BACKGROUND_RESULTS_OPEN);
    expect(input).toContain('"other job"');
    expect(input).not.toContain('"checked job"');
    expect(session.manager.get(other.id)?.deliveredInTurn).toBe(1);
    expect(session.manager.get(checked.id)?.deliveredInTurn).toBe(7);
  });

  it('restart supersedes an undelivered result: the job is delivered once, with its second result', async () => {
    const root = await makeWorkspace(cleanups);
    const sim = await startSim(cleanups);
    const config = makeConfig(sim, root);
    const manager = makeManager(config, cleanups);
    const job = manager.spawn({ task: RESEARCH_TASK, label: 'twice', wave: 3 });
    const firstEnd = await ended(manager, job.id);
    expect(new Deliveries(manager).undeliveredCount).toBe(1);
    manager.restart(job.id);
    expect(new Deliveries(manager).undeliveredCount).toBe(0);
    expect(manager.get(job.id)?.state).toBe('queued');
    const secondEnd = await ended(manager, job.id);
    expect(secondEnd.endedAt).toBeGreaterThanOrEqual(firstEnd.endedAt as number);
    expect(secondEnd.wave).toBeNull();
    const drained = new Deliveries(manager).drain(4);
    expect(drained.map((r) => r.id)).toEqual([job.id]);
    expect(new Deliveries(manager).drain(5)).toEqual([]);
  });
});

describe('alerts', () => {
  it('reach the parent at once as events and at the next turn in one [Background reports] block before the results; capped per job', async () => {
    const root = await makeWorkspace(cleanups);
    const jobsSim = await startSim(cleanups, {
      script: [
        {
          toolCalls: [
            { name: 'report_alert', arguments: { message: 'The API I was asked to study is deprecated.', severity: 'warning' } },
            { name: 'report_alert', arguments: { message: 'Second <b>thing</b>.' } },
            { name: 'report_alert', arguments: { message: 'Third, over the cap.' } },
          ],
        },
        { content: 'Done: it is deprecated.\n<result status="ok" files_touched=""/>' },
      ],
    });
    const parentSim = await startSim(cleanups, {
      script: [
        { toolCalls: [{ name: 'spawn_background_agent', arguments: { task: 'Study the API.', label: 'api study', name: 'api' } }] },
        { content: 'Started it.' },
        { content: 'It is deprecated.' },
      ],
    });
    const config = makeConfig(jobsSim, root, { maxAlertsPerJob: 2 });
    const session = new AgentSession({
      config,
      closeExecutor: true,
      client: createModelClient({ baseUrl: parentSim.url, apiKey: 'k', requestTimeoutMs: 10_000 }),
    });
    cleanups.add(() => session.close({ timeoutMs: 2_000 }));
    const order: string[] = [];
    const alerts: JobAlert[] = [];
    session.on('alert', (a) => {
      alerts.push(a);
      order.push(`alert ${a.number}`);
    });
    session.manager.on('done', (job) => order.push(`done ${job.id}`));
    const followUp = nextEvent<SessionEvents, 'turn-result'>(session, 'turn-result', (t) => t.followUp);
    await session.submit('Study the API in the background.');
    await followUp;
    jobsSim.assertScriptDone();
    parentSim.assertScriptDone();

    const job = session.manager.jobs()[0]!;
    expect(order).toEqual(['alert 1', 'alert 2', `done ${job.id}`]);
    expect(alerts.map((a) => [a.jobId, a.severity])).toEqual([
      [job.id, 'warning'],
      [job.id, 'info'],
    ]);
    // The job's third call was refused in the job: it read a tool error.
    const lastJobRequest = jobsSim.requests.at(-1)!;
    const results = messagesOf(lastJobRequest)
      .filter((m) => m.role === 'tool')
      .map((m) => String(m.content));
    expect(results[2]).toMatch(/^Error: .*2 alerts/);

    const input = String(messagesOf(parentSim.requests[2]!).at(-1)?.content);
    const reports = input.indexOf('[Background reports]');
    expect(reports).toBeGreaterThanOrEqual(0);
    expect(input.indexOf('[Background reports]', reports + 1)).toBe(-1);
    expect(input.indexOf(BACKGROUND_RESULTS_OPEN)).toBeGreaterThan(reports);
    expect(input).toContain('| The API I was asked to study is deprecated.');
    expect(input).toContain('| Second &lt;b&gt;thing&lt;/b&gt;.');
    expect(input).not.toContain('Third');
  });
});
