// Every store interface on one SQL engine, as both engines assemble it: the shared SQL layer over the
// engine's driver, with the memories a serving process keeps (sessions, group pages) in place of the
// plain session and group stores, and the freshness gate over the rounds that catch them up. What
// differs by engine (how the memories read the database, how it is reached, pinged and closed) is
// handed in by sqlite/store.ts and postgres/store.ts.
import { randomBytes } from 'node:crypto';
import {
  type AnswerWindows,
  type CatchUpRounds,
  type CatchUpSource,
  freshnessGate,
} from '../freshness/gate.ts';
import type { GroupStore } from '../group-types.ts';
import type { GroupMemoryAnswers, Memory, SessionMemoryAnswers, SessionStore, Stores } from '../types.ts';
import type { SqlDriver } from './driver.ts';
import { sqlFlowStore } from './flows.ts';
import { sqlGroupSyncStore } from './group-sync.ts';
import { sqlGroupStore } from './groups.ts';
import { sqlPasskeyStore } from './passkeys.ts';
import { sqlSessionStore } from './sessions.ts';
import { sqlThrottleStore } from './throttle.ts';
import { sqlUsernameMaintenance } from './usernames.ts';
import { secretKey, sqlUserStore } from './users.ts';

/** A database's stores, and how each of its memories catches up (open.ts composes the gate). */
export type DatabaseStores = Stores & {
  readonly catchUpSources: Readonly<Partial<Record<Memory, CatchUpSource>>>;
};

/** The memories an engine built (null: not kept), and the rounds that catch both up. */
export interface SqlMemories {
  readonly sessions: { readonly store: SessionStore; readonly answers: SessionMemoryAnswers } | null;
  readonly groups: { readonly store: GroupStore; readonly answers: GroupMemoryAnswers } | null;
  readonly rounds: CatchUpRounds | null;
  readonly windows: AnswerWindows;
}

/** The stores over `driver`; `engine` is what only the engine knows. */
export function sqlStores(
  driver: SqlDriver,
  memories: SqlMemories,
  engine: Pick<Stores, 'engine' | 'ping' | 'tls' | 'close'>,
): DatabaseStores {
  const { sessions, groups, rounds } = memories;
  const catchUpSources: Partial<Record<Memory, CatchUpSource>> = {};
  if (rounds !== null) {
    if (sessions !== null) catchUpSources.sessions = { rounds };
    if (groups !== null) catchUpSources.groups = catchUpSources.sessions ?? { rounds };
  }
  return {
    users: sqlUserStore(driver),
    usernames: sqlUsernameMaintenance(driver),
    groups: groups?.store ?? sqlGroupStore(driver),
    groupSync: sqlGroupSyncStore(driver),
    sessions: sessions?.store ?? sqlSessionStore(driver),
    throttle: sqlThrottleStore(driver),
    flows: sqlFlowStore(driver),
    passkeys: sqlPasskeyStore(driver),
    memory: { sessions: sessions?.answers ?? null, groups: groups?.answers ?? null },
    freshness: freshnessGate(catchUpSources, memories.windows),
    catchUpSources,
    secretKey: () => driver.run(secretKey(randomBytes(32))),
    ...engine,
  };
}
