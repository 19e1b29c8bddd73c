// What every case shares: the context it runs in, how its sides are measured (alternating rounds,
// with the resident memory of each side sampled meanwhile) and how its figures become a row.
import type { Dovecot } from '../test/helpers/dovecot.ts';
import { alternate, type Contender, median, ratiosOf, type Schedule, type Side } from './compare.ts';
import { wrkLoad } from './measures.ts';
import { peaksDuring } from './procs.ts';
import { type CaseRow, fixed, type MemoryRow, MIB, type Verdict } from './report.ts';
import type { SeedResult } from './seed.ts';
import type { Server } from './servers.ts';

export interface BenchContext {
  readonly schedule: Schedule;
  readonly log: (line: string) => void;
  /** The run's temp dir (databases, load files, server logs). */
  readonly dir: string;
  readonly dovecot: Dovecot;
  /** 1 000 000 sessions, the load rotating over 10 000. */
  readonly big: SeedResult;
  /** 1 000 sessions, the load rotating over all of them. */
  readonly small: SeedResult;
  /** The first 1 000 load sessions of `big` (the size case's working set). */
  readonly big1kLoadFile: string;
  /** The baseline's answers (bench/answers.ts). */
  readonly answers: string;
  readonly baseline: Server;
  readonly clubhouse: Server;
  /** Registers a server for the final cleanup; returns it. */
  readonly track: (server: Server) => Server;
  /** Stops a tracked server. */
  readonly stop: (server: Server) => Promise<void>;
}

export interface CaseResult {
  readonly rows: CaseRow[];
  readonly memory: MemoryRow[];
}

/** A side of a case: how to load it, and the processes (with their children) whose memory counts. */
export interface Contestant extends Contender {
  readonly pids: readonly number[];
}

/** A side loaded by wrk with `script` on `urlPath`: one server, whose own processes count. */
export function wrkContestant(
  label: string,
  server: Server,
  script: string,
  urlPath: string,
  loadFile: string,
): Contestant {
  return { label, measure: wrkLoad(server, script, urlPath, loadFile), pids: [server.pid] };
}

/** Runs the sides in alternating rounds; returns each side and its sampled peak RSS (bytes). */
export async function contest(
  context: BenchContext,
  contestants: readonly Contestant[],
): Promise<{ sides: Side[]; peaks: number[] }> {
  const { result, peaks } = await peaksDuring(
    contestants.map((c) => c.pids),
    () => alternate(contestants, context.schedule, context.log),
  );
  return { sides: result, peaks };
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

/** Issue 14: a server's peak RSS stays within 60 MiB of its baseline's, per serving process. */
const HEADROOM_MIB = 60;

export function memoryVerdict(peak: number, baselinePeak: number, processes = 1): Verdict {
  const limit = baselinePeak + HEADROOM_MIB * MIB * processes;
  return {
    target: `≤ baseline ${fixed(baselinePeak / MIB, 1)} + ${HEADROOM_MIB * processes} MiB`,
    actual: `${fixed(peak / MIB, 1)} MiB, ${peak <= limit ? 'within' : 'over'} by ${fixed(Math.abs(limit - peak) / MIB, 1)} MiB`,
    pass: peak <= limit,
  };
}
