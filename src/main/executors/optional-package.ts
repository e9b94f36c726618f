/**
 * Optional packages: the parts of forkpool a library user may not want (the BullMQ executor,
 * the HTTP server, the chat TUI, the tinypool comparison executor, MCP servers, the CLI's OTLP export) need packages that are
 * optional peer dependencies, loaded with `import()` only when the part is used. When one is
 * missing, the error names it and the command that installs it.
 */
import { ForkpoolError } from '../../shared/errors.js';

/** The optional peers, each with the range package.json's `peerDependencies` gives. */
export const OPTIONAL_PACKAGES = {
  '@modelcontextprotocol/client': '@modelcontextprotocol/client@^2.4.0',
  // The CLI's OTLP export (src/cli/tracing.ts); the library itself needs only @opentelemetry/api.
  '@opentelemetry/exporter-trace-otlp-http': '@opentelemetry/exporter-trace-otlp-http@^0.301.2',
  '@opentelemetry/exporter-trace-otlp-proto': '@opentelemetry/exporter-trace-otlp-proto@^0.301.2',
  '@opentelemetry/resources': '@opentelemetry/resources@^3.1.1',
  '@opentelemetry/sdk-trace': '@opentelemetry/sdk-trace@^3.1.1',
  bullmq: 'bullmq@^6.7.0',
  fastify: 'fastify@^5.12.8',
  ink: 'ink@^8.0.0',
  ioredis: 'ioredis@^6.0.0',
  react: 'react@^19.3.1',
  tinypool: 'tinypool@^2.2.0',
} as const;
export type OptionalPackage = keyof typeof OPTIONAL_PACKAGES;

/** The missing package named by a failed `import()`, when it is one of `packages`. */
function missingPackage(error: unknown, packages: readonly OptionalPackage[]): OptionalPackage | undefined {
  const raw = error as { code?: unknown; message?: unknown } | null;
  if (raw?.code !== 'ERR_MODULE_NOT_FOUND' || typeof raw.message !== 'string') return undefined;
  // Node's message: "Cannot find package 'bullmq' imported from …".
  const named = /Cannot find (?:package|module) '([^']+)'/.exec(raw.message)?.[1];
  return packages.find((p) => named === p || named?.startsWith(`${p}/`));
}

/**
 * Runs `load` (an `import()` of the module that uses `packages`); when it fails because one
 * of them is not installed, throws PACKAGE_MISSING naming it, `feature` and the install command.
 */
export async function loadOptional<T>(feature: string, packages: readonly OptionalPackage[], load: () => Promise<T>): Promise<T> {
  try {
    return await load();
  } catch (error) {
    const missing = missingPackage(error, packages);
    if (missing === undefined) throw error;
    const install = packages.map((p) => OPTIONAL_PACKAGES[p]).join(' ');
    throw new ForkpoolError(
      'PACKAGE_MISSING',
      `${feature} needs the package "${missing}", which is not installed (an optional peer dependency of forkpool): npm install ${install}`,
      { cause: error },
    );
  }
}
