/**
 * An OTLP/HTTP receiver on loopback for the CLI's trace tests (test/cli/otel-*.test.ts): it keeps
 * every export request, and reads the spans of the JSON ones.
 */
import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Cleanup } from './cleanup.js';

export interface Export {
  path: string;
  contentType: string;
  body: Buffer;
}

/** An OTLP/HTTP receiver on loopback: keeps every request, answers 200. */
export async function startReceiver(cleanups: Cleanup): Promise<{ url: string; exports: Export[] }> {
  const exports: Export[] = [];
  const server = createServer((req: IncomingMessage, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      exports.push({ path: req.url ?? '', contentType: String(req.headers['content-type']), body: Buffer.concat(chunks) });
      const json = String(req.headers['content-type']).includes('json');
      res.writeHead(200, { 'content-type': json ? 'application/json' : 'application/x-protobuf' }).end(json ? '{}' : '');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  cleanups.add(() => new Promise<void>((resolve) => server.close(() => resolve())));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, exports };
}

export interface JsonSpan {
  name: string;
  spanId: string;
  parentSpanId?: string;
  attributes: Array<{ key: string; value: Record<string, unknown> }>;
}

/** Every span of the JSON exports, with the service names they came under. */
export function jsonSpans(exports: readonly Export[]): { spans: JsonSpan[]; services: string[] } {
  const spans: JsonSpan[] = [];
  const services: string[] = [];
  for (const e of exports) {
    const body = JSON.parse(e.body.toString('utf8')) as {
      resourceSpans: Array<{ resource: { attributes: JsonSpan['attributes'] }; scopeSpans: Array<{ spans: JsonSpan[] }> }>;
    };
    for (const rs of body.resourceSpans) {
      services.push(String(rs.resource.attributes.find((a) => a.key === 'service.name')?.value.stringValue));
      for (const ss of rs.scopeSpans) spans.push(...ss.spans);
    }
  }
  return { spans, services };
}

export const attr = (span: JsonSpan, key: string) => {
  const value = span.attributes.find((a) => a.key === key)?.value;
  return value === undefined ? undefined : Object.values(value)[0];
};
