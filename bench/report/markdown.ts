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

export interface Report {
  /** CPUs of the machine. */
  readonly cores: number;
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
function cpuUs(side: Side): string {
  return fixed(perRequest(side, (r) => r.serverCpuSeconds) * 1e6, 0);
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
  const notes = report.cases.flatMap((row) => row.notes.map((note) => `- ${row.name}: ${note}`));
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
