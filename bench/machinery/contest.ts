// What every case shares: the context it runs in, and how its sides are measured (alternating
// rounds, with the resident memory of each side sampled meanwhile).
import { readFileSync } from 'node:fs';
import type { Dovecot } from '../../test/helpers/dovecot.ts';
import { alternate, type Contender, type Schedule, type Side } from './compare.ts';
import { wrkLoad } from './measures.ts';
import { peaksDuring } from './procs.ts';
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
  /** The baseline's answers (answers.ts). */
  readonly answers: string;
  readonly baseline: Server;
  /** Each session's own answers (baseline.ts); null when no read case runs. */
  readonly sessionBaseline: Server | null;
  readonly clubhouse: Server;
  /** Registers a server for the final cleanup; returns it. */
  readonly track: (server: Server) => Server;
  /** Stops a tracked server. */
  readonly stop: (server: Server) => Promise<void>;
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
  // Every session of the rotation read twice before a round (compare.ts: warmUp).
  const warmupRequests =
    2 *
    readFileSync(loadFile, 'utf8')
      .split('\n')
      .filter((line) => line !== '').length;
  return { label, measure: wrkLoad(server, script, urlPath, loadFile), pids: [server.pid], warmupRequests };
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
