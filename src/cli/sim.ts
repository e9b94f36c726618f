import { startSimServer, FAULT_KINDS, type FaultKind, type SimServer } from '../sim/index.js';
import { EXIT, usageProblem } from './exit.js';

export interface SimFlags {
  port: number;
  host: string;
  latency?: number;
  perToken?: number;
  jitter?: number;
  faultRate?: number;
  faults?: string;
  seed?: number;
}

/** `forkpool sim`: the simulated model alone, until SIGINT/SIGTERM. */
export async function simCommand(flags: SimFlags): Promise<number> {
  const kinds = flags.faults ? flags.faults.split(',').map((k) => k.trim()) : undefined;
  const unknown = kinds?.filter((k) => !(FAULT_KINDS as readonly string[]).includes(k)) ?? [];
  if (unknown.length) {
    return usageProblem('sim', `--faults expects some of ${FAULT_KINDS.join(', ')}; received ${unknown.join(', ')}`);
  }
  if (flags.host !== '127.0.0.1' && flags.host !== 'localhost' && flags.host !== '::1') {
    return usageProblem('sim', `--host must be a loopback address (127.0.0.1, localhost or ::1); received ${flags.host}`);
  }
  let sim: SimServer;
  try {
    sim = await startSimServer({
      port: flags.port,
      host: flags.host,
      latencyMs: flags.latency ?? 0,
      perTokenMs: flags.perToken ?? 0,
      jitterMs: flags.jitter ?? 0,
      faultRate: flags.faultRate ?? 0,
      seed: flags.seed ?? 1,
      recordBodies: false,
      ...(kinds ? { faultKinds: kinds as FaultKind[] } : {}),
    });
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'EADDRINUSE' || code === 'EACCES' || code === 'EADDRNOTAVAIL') {
      const why = code === 'EADDRINUSE' ? 'is already in use' : code === 'EACCES' ? 'needs privileges this process lacks' : 'is not available on this machine';
      return usageProblem('sim', `${flags.host} port ${flags.port} ${why} (${code}); pick another with --port, or --port 0 for any free port`);
    }
    throw error;
  }
  process.stdout.write(`${JSON.stringify({ type: 'listening', url: sim.url, port: sim.port })}\n`);
  await new Promise<void>((resolve) => {
    process.once('SIGINT', resolve);
    process.once('SIGTERM', resolve);
  });
  await sim.close();
  return EXIT.ok;
}
