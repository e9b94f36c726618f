/** The report's figures as text: shared by the main table (report.ts) and the peers' section (peers/report.ts). */
import type { CellResult } from './types.js';

export function fmt(value: number | null | undefined, digits = 1): string {
  if (value === null || value === undefined || !Number.isFinite(value)) return '—';
  if (Math.abs(value) >= 1000) return Math.round(value).toLocaleString('en-US');
  return value.toFixed(digits);
}

/** `value / base`, as "1.02×"; a dash when either is missing or the base is 0. */
export function ratio(value: number | null | undefined, base: number | null | undefined): string {
  if (value == null || base == null || !Number.isFinite(value) || !Number.isFinite(base) || base === 0) return '—';
  const r = value / base;
  if (r >= 100) return `${Math.round(r).toLocaleString('en-US')}×`;
  return `${r >= 10 ? r.toFixed(1) : r >= 0.1 ? r.toFixed(2) : r.toPrecision(2)}×`;
}

/** An efficiency (ideal ÷ measured) as a percentage. */
export function percent(value: number | null | undefined): string {
  return value == null || !Number.isFinite(value) ? '—' : `${Math.round(value * 100)}%`;
}

/** The hard-stop figure: ms, "not stopped after 10 s" (an in-process peer), or n/a (inline has no hard stop). */
export function hardCancel(c: CellResult): string {
  if (c.cancelHardUnstopped) return 'not stopped after 10 s';
  return c.executor === 'inline' ? 'n/a' : fmt(c.cancelHardP50Ms, 1);
}

/** The inline cell of the same workload and fan-out, if it ran. */
export function inlineOf(cells: readonly CellResult[], cell: CellResult): CellResult | undefined {
  return cells.find((c) => c.executor === 'inline' && c.workload === cell.workload && c.jobs === cell.jobs);
}
