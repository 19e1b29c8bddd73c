// The sessions a process keeps in memory, the same on every engine: bounded (oldest out), answering
// only while its window is open (gate.ts: right after a catch-up), and kept exact by one rule for what
// may enter and one for what leaves (docs/freshness.md):
// - leaves: every session a deletion log entry names (change-log.ts), or everything when the log
//   cannot say what happened (an epoch change, a sequence gone backwards, entries purged unread);
//   and on Redis every session key an event names (redis/key-events.ts);
// - enters: a session read together with the log's position at that instant, kept only if the
//   reader has read no entry beyond that position. Ids are never reused, so any later deletion of
//   that session has a later position, which the next catch-up reads.
// Expiry needs no entry: a kept session carries expires_at and is not answered after it. There is no
// negative memory: an unknown id always goes to the store.
import type { SessionRecord, SessionStore } from '../types.ts';
import { ChangeLogReader, type LogPosition } from './change-log.ts';
import type { AnswerWindow } from './gate.ts';

/** A session as read (null: none live), with the deletion log's position in the same snapshot. */
export interface PositionedSession {
  readonly record: SessionRecord | null;
  /** Null when the read must not be kept (on Redis: a key event about it arrived meanwhile). */
  readonly at: LogPosition | null;
}

/** Sessions kept in memory per process by default; beyond this the oldest entries are dropped. */
export const SESSION_MEMORY_ENTRIES = 100_000;

export class SessionMemory {
  // Keyed by the hex of the id's hash; a Map iterates in insertion order, so the first is the oldest.
  readonly #entries = new Map<string, SessionRecord>();
  readonly #window: AnswerWindow;
  readonly #capacity: number;
  /** The reader of the store's deletion log: what it reads leaves memory, its position decides what may enter. */
  readonly log: ChangeLogReader<string> = new ChangeLogReader<string>(this);

  constructor(window: AnswerWindow, capacity = SESSION_MEMORY_ENTRIES) {
    this.#window = window;
    this.#capacity = capacity;
  }

  /**
   * Keeps a session read from the store at `read` (the log's position in the same snapshot), unless
   * the log reader has gone beyond it: a deletion it read may be about this session.
   */
  keep(key: string, record: SessionRecord, read: LogPosition): void {
    if (!this.log.admits(read)) return;
    this.#entries.set(key, record);
    if (this.#entries.size > this.#capacity)
      this.#entries.delete(this.#entries.keys().next().value as string);
  }

  /**
   * The session under `key` live at `now`, from memory; undefined when the window is shut, the session
   * is not kept, or it has expired (then it is dropped): the store is asked instead.
   */
  answer(key: string, now: number): SessionRecord | undefined {
    if (!this.#window.open) return undefined;
    const record = this.#entries.get(key);
    if (record === undefined) return undefined;
    if (record.expiresAt > now) return record;
    this.#entries.delete(key);
    return undefined;
  }

  forget(key: string): void {
    this.#entries.delete(key);
  }

  clear(): void {
    this.#entries.clear();
  }

  /** Drops the sessions expired at `now` (the periodic purge). */
  dropExpired(now: number): void {
    for (const [key, record] of this.#entries) if (record.expiresAt <= now) this.#entries.delete(key);
  }

  get size(): number {
    return this.#entries.size;
  }
}

/**
 * `store` with `memory` filled from its reads: `readAt` answers a session with the deletion log's
 * position in the same snapshot (the rule of what may enter). `afterOwnDeletions` runs after this
 * process deleted sessions, so that none of them is answered from memory again: SQLite reads its log
 * at once (its catch-up reads the log only when another connection committed); on the shared stores
 * the next catch-up, which every answer from memory waits for, reads them.
 */
export function rememberingSessions(
  store: SessionStore,
  readAt: (idHash: Buffer, now: number) => Promise<PositionedSession>,
  memory: SessionMemory,
  afterOwnDeletions: () => void = () => {},
): SessionStore {
  return {
    ...store,
    get: async (idHash, now) => {
      const { record, at } = await readAt(idHash, now);
      if (record !== null && at !== null) memory.keep(idHash.toString('hex'), record, at);
      return record;
    },
    create: async (session, keep) => {
      const ended = await store.create(session, keep);
      if (ended > 0) afterOwnDeletions();
      return ended;
    },
    delete: async (idHash) => {
      memory.forget(idHash.toString('hex'));
      const deleted = await store.delete(idHash);
      afterOwnDeletions();
      return deleted;
    },
    revokeUser: async (username) => {
      const revoked = await store.revokeUser(username);
      afterOwnDeletions();
      return revoked;
    },
    purgeExpired: async (now) => {
      const purged = await store.purgeExpired(now);
      memory.dropExpired(now);
      return purged;
    },
  };
}
