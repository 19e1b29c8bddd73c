// bench/results/latest.md: the figures of one `npm run bench` as Markdown tables.
import { type Comparison, median, medianRound, type Round } from './compare.ts';

export interface Verdict {
  readonly target: string;
  /** The measured value, as it is compared with the target. */
  readonly actual: string;
  /** null: nothing to judge (not available). */
  readonly pass: boolean | null;
}

export interface CaseRow {
  readonly name: string;
  /** null when the case could not run (e.g. WORKERS not available). */
  readonly comparison: Comparison | null;
  readonly unit: 'req/s' | 'logins/s';
  readonly verdicts: readonly Verdict[];
  readonly notes: readonly string[];
}

export interface MemoryRow {
  readonly name: string;
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

/** The whole file. */
export function renderReport(report: Report): string {
  const lines: string[] = ['# clubhouse benchmark', ''];
  lines.push(...report.machine.map((line) => `- ${line}`), '');
  lines.push(...report.method.map((line) => `- ${line}`), '');

  lines.push(
    '| Case | Reference | Reference rate | clubhouse rate | clubhouse p50 | clubhouse p99 | ≥ 400 per round | Ratio | Target | Result |',
    '|---|---|---:|---:|---:|---:|---:|---:|---|---|',
  );
  for (const row of report.cases) {
    const targets = row.verdicts.map((v) => v.target).join('; ');
    const results = row.verdicts.map(passText).join('; ');
    if (row.comparison === null) {
      lines.push(`| ${row.name} | – | – | not available | – | – | – | – | ${targets} | ${results} |`);
      continue;
    }
    const reference = medianRound(row.comparison.reference);
    const subject = medianRound(row.comparison.subject);
    lines.push(
      `| ${row.name} | ${row.comparison.reference.label} | ${rate(reference.rate)} ${row.unit} | ` +
        `${rate(subject.rate)} ${row.unit} | ${fixed(subject.p50Ms, 2)} ms | ${fixed(subject.p99Ms, 2)} ms | ` +
        `${rate(subject.non2xx)} | ${fixed(median(row.comparison.ratios), 3)}× | ${targets} | ${results} |`,
    );
  }
  const notes = report.cases.flatMap((row) => row.notes.map((note) => `- ${row.name}: ${note}`));
  if (notes.length > 0) lines.push('', ...notes);

  lines.push(
    '',
    '## Memory',
    '',
    '| Server | Peak RSS | Detail | Target | Result |',
    '|---|---:|---|---|---|',
  );
  for (const row of report.memory) {
    const peak = row.peak === null ? 'not available' : `${fixed(row.peak / MIB, 1)} MiB`;
    const verdict = row.verdict === null ? '– | –' : `${row.verdict.target} | ${passText(row.verdict)}`;
    lines.push(`| ${row.name} | ${peak} | ${row.detail} | ${verdict} |`);
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
