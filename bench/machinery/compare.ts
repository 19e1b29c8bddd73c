// One benchmark case: a reference and a subject measured in alternating rounds after a warm-up,
// so that drift of the machine (other processes, thermal, caches) hits both alike; the ratio is
// taken within each round, then the median of those.

/** What one load run measured on one side. */
export interface Round {
  /** Requests (or logins) per second. */
  readonly rate: number;
  /** Requests (or logins) answered in the round. */
  readonly requests: number;
  readonly p50Ms: number;
  readonly p99Ms: number;
  /** Responses with status ≥ 400 (or failed logins). */
  readonly non2xx: number;
  /** Socket errors and timeouts. */
  readonly errors: number;
  /** CPU the server under load used, in cores; NaN when not measured. */
  readonly serverCores: number;
  /** CPU seconds the server's processes used in the round; NaN when not measured. */
  readonly serverCpuSeconds: number;
  /** Bytes the server wrote to its stdout (its log) in the round; NaN when not measured. */
  readonly logBytes: number;
  /** CPU the load generator used, in cores. */
  readonly clientCores: number;
  /** Share of the whole machine's CPU that was busy during the run, 0..1. */
  readonly machineBusy: number;
}

export interface Side {
  readonly label: string;
  readonly rounds: readonly Round[];
}

export interface Comparison {
  readonly reference: Side;
  readonly subject: Side;
  /** subject rate / reference rate, one per round. */
  readonly ratios: readonly number[];
}

/** Runs the load against one side for `seconds`. */
export type Measure = (seconds: number) => Promise<Round>;

export interface Schedule {
  readonly warmupSeconds: number;
  readonly roundSeconds: number;
  readonly rounds: number;
}

const MAX_WARMUP_SECONDS = 90;

async function warmUp(side: Contender, schedule: Schedule): Promise<void> {
  const first = await side.measure(schedule.warmupSeconds);
  const least = side.warmupRequests ?? 0;
  if (first.requests >= least || !(first.rate > 0)) return;
  // Each run starts the rotation over (wrk/common.lua): one run long enough to read it all, at the
  // first run's rate and a fifth more, not a series of short ones that read its beginning again.
  await side.measure(Math.min(MAX_WARMUP_SECONDS, Math.ceil((least / first.rate) * 1.2)));
}

export function median(values: readonly number[]): number {
  const sorted = values.filter((v) => !Number.isNaN(v)).sort((a, b) => a - b);
  if (sorted.length === 0) return Number.NaN;
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2;
}

/** The median of each figure over the rounds of one side. */
export function medianRound(side: Side): Round {
  const of = (pick: (round: Round) => number) => median(side.rounds.map(pick));
  return {
    rate: of((r) => r.rate),
    requests: of((r) => r.requests),
    p50Ms: of((r) => r.p50Ms),
    p99Ms: of((r) => r.p99Ms),
    non2xx: of((r) => r.non2xx),
    errors: of((r) => r.errors),
    serverCores: of((r) => r.serverCores),
    serverCpuSeconds: of((r) => r.serverCpuSeconds),
    logBytes: of((r) => r.logBytes),
    clientCores: of((r) => r.clientCores),
    machineBusy: of((r) => r.machineBusy),
  };
}

export interface Contender {
  readonly label: string;
  readonly measure: Measure;
  /**
   * The least the side answers in one run of its warm-up: when the first run answered fewer, a
   * second run long enough to answer that many follows (at most MAX_WARMUP_SECONDS). On a crowded
   * host a few seconds may not read every session of the rotation once, and the first round would
   * then measure filling the memories.
   */
  readonly warmupRequests?: number;
}

/** The median over the rounds of `numerator / requests` (CPU seconds or log bytes per request). */
export function perRequest(side: Side, numerator: (round: Round) => number): number {
  return median(side.rounds.map((round) => numerator(round) / round.requests));
}

/** `a.rate / b.rate` round by round. */
export function ratiosOf(a: Side, b: Side): number[] {
  return a.rounds.map((round, i) => round.rate / b.rounds[i]!.rate);
}

/**
 * Warm-up of each side, then `rounds` rounds in which every side runs once: in the given order in
 * the even rounds and in reverse in the odd ones (A B, B A, A B, …). A shared host's speed drifts
 * over seconds; measured always first, the reference would meet the drift of each round before the
 * subject does, and a round's ratio would carry it one way more often than the other.
 */
export async function alternate(
  sides: readonly Contender[],
  schedule: Schedule,
  log: (line: string) => void,
): Promise<Side[]> {
  for (const side of sides) await warmUp(side, schedule);
  const rounds: Round[][] = sides.map(() => []);
  for (let i = 0; i < schedule.rounds; i++) {
    const order = [...sides.keys()];
    if (i % 2 === 1) order.reverse();
    for (const k of order) rounds[k]!.push(await sides[k]!.measure(schedule.roundSeconds));
    const figures = sides.map((side, k) => {
      const round = rounds[k]![i]!;
      const ratio = k === 0 ? '' : `, ×${(round.rate / rounds[0]![i]!.rate).toFixed(3)}`;
      return `${side.label} ${round.rate.toFixed(0)}/s (p50 ${round.p50Ms.toFixed(2)}, p99 ${round.p99Ms.toFixed(2)} ms${ratio})`;
    });
    log(`  round ${i + 1}${i % 2 === 1 ? ' (reversed)' : ''}: ${figures.join('; ')}`);
  }
  return sides.map((side, k) => ({ label: side.label, rounds: rounds[k]! }));
}
