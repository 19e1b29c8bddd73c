// How a case's figures become rows of the report: the ratio to its reference against its target,
// any other verdicts, the notes (errors under load), and the memory verdict.
import { median, ratiosOf, type Side } from '../machinery/compare.ts';
import { type CaseRow, fixed, type MemoryRow, MIB, type Verdict } from './markdown.ts';

export interface CaseResult {
  readonly rows: CaseRow[];
  readonly memory: MemoryRow[];
  /** Lines for the report's observations (e.g. what bounds a case's figures). */
  readonly observations?: readonly string[];
  /**
   * A 1-process clubhouse on the 1 000 000-session database that the case started for itself (the
   * size case): its VmHWM (bytes) counts toward the 1-process peak, as the shared process's does.
   */
  readonly onePeak?: number;
}

export function atLeast(target: string, value: number, minimum: number): Verdict {
  return { target, actual: `${fixed(value, 2)}×`, pass: value >= minimum };
}

function unexpectedErrors(subject: Side, allowNon2xx: boolean): string[] {
  const notes: string[] = [];
  const non2xx = subject.rounds.reduce((a, r) => a + r.non2xx, 0);
  const errors = subject.rounds.reduce((a, r) => a + r.errors, 0);
  if (!allowNon2xx && non2xx > 0) notes.push(`${non2xx} responses ≥ 400 under load`);
  if (errors > 0) notes.push(`${errors} socket errors or timeouts under load`);
  return notes;
}

export interface RowSpec {
  readonly name: string;
  readonly chartLabel: string;
  readonly reference: Side;
  readonly subject: Side;
  /** Sampled peak RSS of [reference, subject] during the case, bytes. */
  readonly peaks?: readonly [number, number];
  /** The least ratio (subject / reference) the target asks for; null: no target on the ratio. */
  readonly minimum: number | null;
  readonly verdicts?: readonly Verdict[];
  readonly notes?: readonly string[];
  readonly unit?: CaseRow['unit'];
  /** The subject answers ≥ 400 on purpose (check without a cookie; failed logins are noted apart). */
  readonly allowNon2xx?: boolean;
}

/** A row of the case table: ratio with its target first, then any other verdicts. */
export function caseRow(spec: RowSpec): CaseRow {
  const ratios = ratiosOf(spec.subject, spec.reference);
  const ratio = median(ratios);
  const verdicts =
    spec.minimum === null
      ? [{ target: `vs ${spec.reference.label}`, actual: `${fixed(ratio, 2)}×`, pass: null }]
      : [atLeast(`≥ ${spec.minimum.toFixed(2)}× ${spec.reference.label}`, ratio, spec.minimum)];
  return {
    name: spec.name,
    chartLabel: spec.chartLabel,
    comparison: { reference: spec.reference, subject: spec.subject, ratios },
    unit: spec.unit ?? 'req/s',
    verdicts: [...verdicts, ...(spec.verdicts ?? [])],
    notes: [...(spec.notes ?? []), ...unexpectedErrors(spec.subject, spec.allowNon2xx ?? false)],
    ratioTarget: spec.minimum,
    peakRss: spec.peaks === undefined ? null : { reference: spec.peaks[0], subject: spec.peaks[1] },
  };
}

/** How many failures of each reason, as one line (`3× 503, 1× timeout`). */
export function failureText(failures: Record<string, number>): string {
  return Object.entries(failures)
    .map(([reason, n]) => `${n}× ${reason}`)
    .join(', ');
}

/**
 * A server's peak RSS stays within 60 MiB of its baseline's per serving process when several serve
 * (two instances, WORKERS=2), and within 40 MiB for one process (docs/benchmarks.md, "Targets").
 */
const HEADROOM_MIB = 60;
const ONE_PROCESS_HEADROOM_MIB = 40;

export function memoryVerdict(peak: number, baselinePeak: number, processes = 1): Verdict {
  const headroom = processes === 1 ? ONE_PROCESS_HEADROOM_MIB : HEADROOM_MIB * processes;
  const limit = baselinePeak + headroom * MIB;
  return {
    target: `≤ baseline ${fixed(baselinePeak / MIB, 1)} + ${headroom} MiB`,
    actual: `${fixed(peak / MIB, 1)} MiB, ${peak <= limit ? 'within' : 'over'} by ${fixed(Math.abs(limit - peak) / MIB, 1)} MiB`,
    pass: peak <= limit,
  };
}
