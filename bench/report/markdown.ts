// bench/results/latest.md: the figures of one `npm run bench` as Markdown tables.
import {
  type Comparison,
  median,
  medianRound,
  perRequest,
  type Round,
  type Side,
} from '../machinery/compare.ts';

export interface Verdict {
  readonly target: string;
  /** The measured value, as it is compared with the target. */
  readonly actual: string;
  /** null: nothing to judge (not available). */
  readonly pass: boolean | null;
}

export interface CaseRow {
  readonly name: string;
  /** A short name for the chart. */
  readonly chartLabel: string;
  /** null when the case could not run (e.g. WORKERS not available). */
  readonly comparison: Comparison | null;
  readonly unit: 'req/s' | 'logins/s';
  readonly verdicts: readonly Verdict[];
  readonly notes: readonly string[];
  /** The least ratio the target asks for (drawn on the chart); null when the ratio has none. */
  readonly ratioTarget: number | null;
  /** Sampled peak of the summed VmRSS of each side's processes during the case, bytes. */
  readonly peakRss: { readonly reference: number; readonly subject: number } | null;
}

export interface MemoryRow {
  readonly name: string;
  /** Bytes resident when idle after start; null when not taken. */
  readonly idle: number | null;
  /** Bytes. */
  readonly peak: number | null;
  readonly detail: string;
  readonly verdict: Verdict | null;
}

/** The reference's CPU per request of each row, as the last recorded run reported it. */
export interface RecordedRun {
  /** The file it was read from, relative to the repository, and the date and commit it names. */
  readonly source: string;
  readonly date: string;
  readonly commit: string;
  /** Row name → the reference's CPU µs per request. */
  readonly referenceCpuUs: ReadonlyMap<string, number>;
}

/** Beyond this factor either way, a row's reference cost says the machine differs from the last recorded run's. */
const MACHINE_DRIFT = 1.5;

export interface Report {
  /** CPUs of the machine. */
  readonly cores: number;
  /** The last recorded full run, to say how this machine compares (null: none readable). */
  readonly recorded: RecordedRun | null;
  readonly machine: readonly string[];
  readonly method: readonly string[];
  /** What each server was started with (every other setting at its default). */
  readonly settings: readonly string[];
  readonly cases: readonly CaseRow[];
  readonly memory: readonly MemoryRow[];
  readonly observations: readonly string[];
}

export const MIB = 1024 * 1024;

export function fixed(value: number, digits: number): string {
  return Number.isFinite(value) ? value.toFixed(digits) : '–';
}

function rate(value: number): string {
  return Number.isFinite(value) ? Math.round(value).toLocaleString('en-US') : '–';
}

function passText(verdict: Verdict): string {
  if (verdict.pass === null) return `n/a (${verdict.actual})`;
  return `${verdict.pass ? '**pass**' : '**FAIL**'} (${verdict.actual})`;
}

function percent(value: number): string {
  return Number.isFinite(value) ? `${Math.round(value * 100)} %` : '–';
}

/** Cores the rest of the machine used during `round`. */
function rest(round: Round, cores: number): number {
  return Math.max(0, round.machineBusy * cores - round.serverCores - round.clientCores);
}

function mib(bytes: number | null | undefined): string {
  return bytes === null || bytes === undefined ? '–' : fixed(bytes / MIB, 1);
}

/** CPU µs per request of a side (its server processes' user + system time / requests). */
function cpuUsOf(side: Side): number {
  return perRequest(side, (r) => r.serverCpuSeconds) * 1e6;
}

function cpuUs(side: Side): string {
  return fixed(cpuUsOf(side), 0);
}

/**
 * The machine note of a row: its reference's CPU per request here and in the last recorded run, and a
 * warning when the two differ by more than MACHINE_DRIFT (the figures then come from a machine that
 * runs even the bare server at another cost: a busier or slower one, or a quieter one).
 */
function machineNote(
  row: CaseRow,
  recorded: RecordedRun | null,
): { note: string; drift: string | null } | null {
  if (row.comparison === null) return null;
  const { reference } = row.comparison;
  const here = cpuUsOf(reference);
  if (!Number.isFinite(here)) return null;
  const unit = row.unit === 'req/s' ? 'request' : 'login';
  const before = recorded?.referenceCpuUs.get(row.name);
  const own = `${reference.label} CPU per ${unit} ${fixed(here, 1)} µs`;
  if (recorded === null || before === undefined || !(before > 0))
    return { note: `${own} (no figure for this row in the last recorded run)`, drift: null };
  const factor = here / before;
  const note = `${own}; ${fixed(before, 0)} µs in the last recorded run (${recorded.date}, ${recorded.commit}): ${fixed(factor, 2)}×`;
  const far = factor > MACHINE_DRIFT || factor < 1 / MACHINE_DRIFT;
  return {
    note: far
      ? `${note}. **Warning: the reference costs ${factor > 1 ? `${fixed(factor, 1)}× more` : `${fixed(1 / factor, 1)}× less`} per ${unit} than in the last recorded run: these figures come from a ${factor > 1 ? 'slower or busier' : 'faster or quieter'} machine**`
      : note,
    drift: far ? `${row.name} (${fixed(factor, 2)}×)` : null,
  };
}

/**
 * The reference's CPU per request of each row of a report written by renderReport (its case table's
 * "Reference CPU per request" column), with the run's date and commit; null when none can be read.
 */
export function recordedRun(markdown: string, source: string): RecordedRun | null {
  const date = /^- Date (\S+); commit (\S+)/m.exec(markdown);
  const lines = markdown.split('\n');
  const header = lines.findIndex(
    (line) => line.startsWith('| Case |') && line.includes('Reference CPU per request'),
  );
  if (date === null || header < 0) return null;
  const cells = (line: string) => line.split(' | ').map((cell) => cell.replace(/^\| ?| ?\|$/g, '').trim());
  const column = cells(lines[header]!).indexOf('Reference CPU per request');
  const referenceCpuUs = new Map<string, number>();
  for (const line of lines.slice(header + 2)) {
    if (!line.startsWith('| ')) break;
    const row = cells(line);
    const us = Number.parseFloat(row[column] ?? '');
    if (Number.isFinite(us)) referenceCpuUs.set(row[0]!, us);
  }
  return { source, date: date[1]!.slice(0, 16).replace('T', ' '), commit: date[2]!, referenceCpuUs };
}

/** The whole file. */
export function renderReport(report: Report): string {
  const lines: string[] = ['# clubhouse benchmark', ''];
  lines.push(...report.machine.map((line) => `- ${line}`), '');
  lines.push(...report.method.map((line) => `- ${line}`), '');
  lines.push('Settings (every other setting at its default, `LOG_LEVEL` included):', '');
  lines.push(...report.settings.map((line) => `- ${line}`), '');

  lines.push(
    '| Case | Reference | Ratio | Target | Result | clubhouse rate | Reference rate | clubhouse p50 / p99 | ' +
      'clubhouse CPU per request | Reference CPU per request | clubhouse log per request | ' +
      'Peak RSS clubhouse / reference | ≥ 400 per round |',
    '|---|---|---:|---|---|---:|---:|---:|---:|---:|---:|---:|---:|',
  );
  for (const row of report.cases) {
    const targets = row.verdicts.map((v) => v.target).join('; ');
    const results = row.verdicts.map(passText).join('; ');
    if (row.comparison === null) {
      lines.push(
        `| ${row.name} | – | – | ${targets} | ${results} | not available | – | – | – | – | – | – | – |`,
      );
      continue;
    }
    const { reference, subject, ratios } = row.comparison;
    const [ref, sub] = [medianRound(reference), medianRound(subject)];
    const logBytes = perRequest(subject, (r) => r.logBytes);
    const unit = row.unit === 'req/s' ? 'request' : 'login';
    lines.push(
      `| ${row.name} | ${reference.label} | ${fixed(median(ratios), 3)}× | ${targets} | ${results} | ` +
        `${rate(sub.rate)} ${row.unit} | ${rate(ref.rate)} ${row.unit} | ` +
        `${fixed(sub.p50Ms, 2)} / ${fixed(sub.p99Ms, 2)} ms | ${cpuUs(subject)} µs | ${cpuUs(reference)} µs | ` +
        `${Number.isFinite(logBytes) ? `${Math.round(logBytes)} B/${unit}` : '–'} | ` +
        `${mib(row.peakRss?.subject)} / ${mib(row.peakRss?.reference)} MiB | ${rate(sub.non2xx)} |`,
    );
  }
  const machine = report.cases.map((row) => machineNote(row, report.recorded));
  const notes = report.cases.flatMap((row, i) =>
    [...(machine[i] === null ? [] : [machine[i]!.note]), ...row.notes].map(
      (note) => `- ${row.name}: ${note}`,
    ),
  );
  const drifts = machine.flatMap((m) => (m?.drift === null || m === null ? [] : [m.drift]));
  if (drifts.length > 0) {
    lines.push(
      '',
      `**Warning: this machine is not the last recorded run's.** The reference's own CPU per request is more than ` +
        `${MACHINE_DRIFT}× away from ${report.recorded!.source} (${report.recorded!.date}) in ${drifts.join(', ')}: ` +
        'compare the ratios, not the rates, with that run, and read them as taken on a different machine.',
    );
  }
  if (notes.length > 0) lines.push('', ...notes);

  lines.push(
    '',
    '## Memory',
    '',
    '| Server | Idle RSS | Peak RSS | Detail | Target | Result |',
    '|---|---:|---:|---|---|---|',
  );
  for (const row of report.memory) {
    const peak = row.peak === null ? 'not available' : `${mib(row.peak)} MiB`;
    const idle = row.idle === null ? '–' : `${mib(row.idle)} MiB`;
    const verdict = row.verdict === null ? '– | –' : `${row.verdict.target} | ${passText(row.verdict)}`;
    lines.push(`| ${row.name} | ${idle} | ${peak} | ${row.detail} | ${verdict} |`);
  }

  lines.push(
    '',
    '## Rounds',
    '',
    "CPU in cores (1.00 = one core busy for the whole round), during the subject's round unless said otherwise. " +
      '"Rest" is what the rest of the machine used meanwhile: Dovecot during logins, and any other process ' +
      '(e.g. test suites of other work trees). "Machine busy" is the share of all cores busy, whoever used them.',
    '',
    '| Case | Round | Reference rate | Subject rate | Ratio | Subject p50 / p99 ms | Subject server CPU | Load generator CPU | Rest | Machine busy | Reference server CPU |',
    '|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
  );
  for (const row of report.cases) {
    if (row.comparison === null) continue;
    const { reference, subject, ratios } = row.comparison;
    subject.rounds.forEach((round, i) => {
      const ref = reference.rounds[i]!;
      lines.push(
        `| ${row.name} | ${i + 1} | ${rate(ref.rate)} | ${rate(round.rate)} | ${fixed(ratios[i]!, 3)} | ` +
          `${fixed(round.p50Ms, 2)} / ${fixed(round.p99Ms, 2)} | ${fixed(round.serverCores, 2)} | ` +
          `${fixed(round.clientCores, 2)} | ${fixed(rest(round, report.cores), 2)} | ${percent(round.machineBusy)} | ` +
          `${fixed(ref.serverCores, 2)} |`,
      );
    });
  }
  if (report.observations.length > 0) {
    lines.push('', '## Observations', '', ...report.observations.map((line) => `- ${line}`));
  }
  return `${lines.join('\n')}\n`;
}
