/**
 * The real OpenTelemetry SDK as the global tracer provider for one test file, its finished spans
 * kept in memory; the provider shut down and the global API disabled after the file.
 *
 *   const exporter = useInMemoryTracer();
 *   ... exporter.getFinishedSpans()
 */
import { trace } from '@opentelemetry/api';
import { InMemorySpanExporter, SimpleSpanProcessor, TracerProvider } from '@opentelemetry/sdk-trace';
import { afterAll, beforeAll } from 'vitest';

export function useInMemoryTracer(): InMemorySpanExporter {
  const exporter = new InMemorySpanExporter();
  const provider = new TracerProvider({ spanProcessors: [new SimpleSpanProcessor({ exporter })] });
  beforeAll(() => void trace.setGlobalTracerProvider(provider));
  afterAll(async () => {
    await provider.shutdown();
    trace.disable();
  });
  return exporter;
}
