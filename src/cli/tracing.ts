/**
 * The CLI's traces: when `OTEL_EXPORTER_OTLP_ENDPOINT` or `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`
 * is set, a tracer provider exporting over OTLP/HTTP (`OTEL_EXPORTER_OTLP_PROTOCOL`: `http/json`
 * or `http/protobuf`, the default) is registered for forkpool's spans (src/shared/tracing.ts),
 * named by `OTEL_SERVICE_NAME`. The SDK packages are optional peers, loaded only then; when one
 * is missing the command says so in one line and runs untraced. {@link flushCliTracing} runs at
 * exit, SIGTERM included (common.ts).
 */
import { loadOptional, type OptionalPackage } from '../main/executors/optional-package.js';
import { errorMessage } from '../shared/errors.js';

/** The longest a flush at exit may take (an unreachable collector must not hold the exit). */
const FLUSH_TIMEOUT_MS = 5_000;

type Protocol = 'http/json' | 'http/protobuf';

/** The provider this process registered, if any: one per CLI process. */
let active: { shutdown(): Promise<void> } | undefined;

/** Which exporter the environment asks for; undefined when tracing is off (no endpoint, disabled). */
export function tracingWanted(env: NodeJS.ProcessEnv): { protocol: string } | undefined {
  const endpoint = env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT?.trim() || env.OTEL_EXPORTER_OTLP_ENDPOINT?.trim();
  if (!endpoint || env.OTEL_SDK_DISABLED?.trim().toLowerCase() === 'true' || env.OTEL_TRACES_EXPORTER?.trim() === 'none') return undefined;
  const protocol = env.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL?.trim() || env.OTEL_EXPORTER_OTLP_PROTOCOL?.trim() || 'http/protobuf';
  return { protocol };
}

/**
 * Registers the OTLP provider when the environment asks for one. Never throws: a missing package
 * or an unsupported protocol is one warning line (`warn`), and the command runs untraced.
 */
export async function startCliTracing(env: NodeJS.ProcessEnv, warn: (line: string) => void): Promise<void> {
  const wanted = tracingWanted(env);
  if (!wanted || active) return;
  if (wanted.protocol !== 'http/json' && wanted.protocol !== 'http/protobuf') {
    warn(`forkpool: warning: tracing is off: OTEL_EXPORTER_OTLP_PROTOCOL "${wanted.protocol}" is not supported (use http/protobuf or http/json)`);
    return;
  }
  try {
    active = await registerProvider(wanted.protocol, env.OTEL_SERVICE_NAME?.trim() || 'forkpool');
  } catch (error) {
    warn(`forkpool: warning: tracing is off: ${errorMessage(error)}`);
  }
}

async function registerProvider(protocol: Protocol, serviceName: string): Promise<{ shutdown(): Promise<void> }> {
  const exporterPackage: OptionalPackage = protocol === 'http/json' ? '@opentelemetry/exporter-trace-otlp-http' : '@opentelemetry/exporter-trace-otlp-proto';
  const feature = `exporting traces (OTEL_EXPORTER_OTLP_ENDPOINT, ${protocol})`;
  const packages: OptionalPackage[] = ['@opentelemetry/sdk-trace', '@opentelemetry/resources', exporterPackage];
  const [sdk, resources, exporters] = await loadOptional(feature, packages, () =>
    Promise.all([
      import('@opentelemetry/sdk-trace'),
      import('@opentelemetry/resources'),
      protocol === 'http/json' ? import('@opentelemetry/exporter-trace-otlp-http') : import('@opentelemetry/exporter-trace-otlp-proto'),
    ]),
  );
  // The exporter reads its endpoint, headers and timeout from the OTEL_EXPORTER_OTLP_* variables itself.
  const provider = new sdk.TracerProvider({
    resource: resources.resourceFromAttributes({ 'service.name': serviceName }),
    spanProcessors: [new sdk.BatchSpanProcessor({ exporter: new exporters.OTLPTraceExporter() })],
  });
  // Loaded here, not at the top: `forkpool --version` imports this file (index.ts) and needs none of it.
  const { trace } = await import('@opentelemetry/api');
  if (!trace.setGlobalTracerProvider(provider)) throw new Error('another tracer provider is already registered in this process');
  return provider;
}

/** Exports what is buffered and stops the provider, within {@link FLUSH_TIMEOUT_MS}. Resolves either way. */
export async function flushCliTracing(): Promise<void> {
  const provider = active;
  if (!provider) return;
  active = undefined;
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<void>((resolve) => {
    timer = setTimeout(resolve, FLUSH_TIMEOUT_MS);
    timer.unref();
  });
  try {
    await Promise.race([provider.shutdown().catch(() => undefined), late]);
  } finally {
    clearTimeout(timer);
  }
}
