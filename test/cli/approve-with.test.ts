/**
 * `fanout --approve-with`'s approver on its own: a loopback URL that gets the pending approval
 * and answers a decision, a command that reads it on stdin and prints one, and each way either
 * fails, which must be a deny naming what happened (never a rejection, never an allow).
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { describe, expect, it } from 'vitest';
import { askApprover, parseApprover, type Approver } from '../../src/cli/approve-with.js';
import type { PendingApproval } from '../../src/shared/approvals.js';
import { useCleanup } from '../helpers/cleanup.js';

const cleanup = useCleanup();

const PENDING: PendingApproval = {
  jobId: 'bg-1',
  callId: 'call_7',
  tool: 'write_file',
  summary: 'write notes.txt (12 bytes)',
  args: '{"path":"notes.txt","content":"hello there"}',
  label: 'line 1',
  requestedAt: 1_000,
  expiresAt: 601_000,
};

/** A loopback approver that answers with `answer(body)` and keeps what it was sent. */
async function approverServer(answer: (body: unknown, res: ServerResponse) => void): Promise<{ url: string; received: unknown[] }> {
  const received: unknown[] = [];
  const server = createServer((req: IncomingMessage, res) => {
    let text = '';
    req.setEncoding('utf8').on('data', (chunk: string) => (text += chunk));
    req.on('end', () => {
      const body: unknown = JSON.parse(text);
      received.push(body);
      answer(body, res);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  cleanup.add(() => new Promise<void>((resolve) => server.close(() => resolve())));
  const address = server.address();
  return { url: `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}/approve`, received };
}

const command = (script: string): Approver => ({ kind: 'command', command: `${JSON.stringify(process.execPath)} -e ${JSON.stringify(script)}` });

describe('--approve-with: which approver a value means', () => {
  it('an http(s) URL, a command, and a refused scheme or empty value naming what was received', () => {
    expect(parseApprover('http://127.0.0.1:9/a')).toEqual({ kind: 'url', url: 'http://127.0.0.1:9/a' });
    expect(parseApprover(' ./approve.sh --strict ')).toEqual({ kind: 'command', command: './approve.sh --strict' });
    expect(parseApprover('ftp://example.test/x')).toEqual({ problem: expect.stringContaining('received a ftp:// URL') });
    expect(parseApprover('  ')).toEqual({ problem: expect.stringContaining('received an empty value') });
  });
});

describe('--approve-with URL', () => {
  it('POSTs the pending approval and takes its decision, by approve-with whatever it claims', async () => {
    const approver = await approverServer((_body, res) => res.end(JSON.stringify({ decision: 'allow', remember: true })));
    const decision = await askApprover({ kind: 'url', url: approver.url }, PENDING, 10_000);
    expect(decision).toEqual({ decision: 'allow', remember: true, by: 'approve-with' });
    expect(approver.received).toEqual([PENDING]);
  });

  it('a non-2xx status, a body that is not JSON, or JSON that is no decision: a deny that says which', async () => {
    const status = await approverServer((_body, res) => res.writeHead(503).end('busy'));
    const notJson = await approverServer((_body, res) => res.end('yes please'));
    const noDecision = await approverServer((_body, res) => res.end(JSON.stringify({ decision: 'maybe', by: 'someone' })));
    const denies = await Promise.all([status, notJson, noDecision].map(({ url }) => askApprover({ kind: 'url', url }, PENDING, 10_000)));
    expect(denies.map((d) => [d.decision, d.by])).toEqual([
      ['deny', 'approve-with'],
      ['deny', 'approve-with'],
      ['deny', 'approve-with'],
    ]);
    expect(denies[0]?.reason).toMatch(/HTTP 503: "busy"/);
    expect(denies[1]?.reason).toMatch(/not JSON: "yes please"/);
    expect(denies[2]?.reason).toMatch(/no decision .*decision/);
  });

  it('a refused connection and an approver that never answers: a deny, the latter at the bound', async () => {
    const silent = await approverServer(() => {});
    // A port that was free a moment ago: nothing listens there now.
    const gone = createServer();
    await new Promise<void>((resolve) => gone.listen(0, '127.0.0.1', resolve));
    const port = (gone.address() as { port: number }).port;
    await new Promise((resolve) => gone.close(resolve));
    const [late, refusedConnection] = await Promise.all([
      askApprover({ kind: 'url', url: silent.url }, PENDING, 300),
      askApprover({ kind: 'url', url: `http://127.0.0.1:${port}/approve` }, PENDING, 10_000),
    ]);
    expect(late).toMatchObject({ decision: 'deny', reason: expect.stringContaining('no answer within 300 ms') });
    expect(refusedConnection).toMatchObject({ decision: 'deny', reason: expect.stringContaining('gave no decision') });
  });
});

describe('--approve-with command', () => {
  it('gets the pending approval on stdin and its printed decision counts', async () => {
    // It allows only what it read: the job's call id comes back in the reason.
    const script = `let t='';process.stdin.on('data',d=>t+=d).on('end',()=>{const p=JSON.parse(t);console.log(JSON.stringify({decision:p.tool==='write_file'?'allow':'deny',reason:'saw '+p.callId}))})`;
    expect(await askApprover(command(script), PENDING, 10_000)).toEqual({ decision: 'allow', reason: 'saw call_7', by: 'approve-with' });
  });

  it('an exit code other than 0 (even after printing allow), or output that is no decision: a deny naming it', async () => {
    const failed = await askApprover(command(`console.log('{"decision":"allow"}');console.error('no key');process.exit(3)`), PENDING, 10_000);
    expect(failed).toMatchObject({ decision: 'deny', by: 'approve-with', reason: expect.stringMatching(/exited with code 3: "no key"/) });
    const garbled = await askApprover(command(`console.log('allow')`), PENDING, 10_000);
    expect(garbled).toMatchObject({ decision: 'deny', reason: expect.stringContaining('not JSON') });
  });

  it('a command that hangs is killed at the bound: a deny', async () => {
    const hung = await askApprover(command('setInterval(() => {}, 1000)'), PENDING, 500);
    expect(hung).toMatchObject({ decision: 'deny', reason: expect.stringContaining('no answer within 500 ms') });
  });
});
