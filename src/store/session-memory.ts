// The sessions an instance keeps in memory on the shared stores (issue 24: postgres/sessions.ts,
// redis/session-cache.ts): bounded, oldest out, and answered only while a look is open. What keeps it
// exact (which reads may enter, what a look evicts) is each store's; this is only the keeping.
import type { SharedLook } from './shared-look.ts';
import type { SessionRecord } from './types.ts';

/** Sessions kept in memory per process; beyond this the oldest entries are dropped. */
export const SESSION_CACHE_ENTRIES = 100_000;

export class SessionMemory {
  // Keyed by the hex of the id's hash; a Map iterates in insertion order, so the first is the oldest.
  readonly #entries = new Map<string, SessionRecord>();
  readonly #look: SharedLook;
  readonly #capacity: number;

  constructor(look: SharedLook, capacity = SESSION_CACHE_ENTRIES) {
    this.#look = look;
    this.#capacity = capacity;
  }

  remember(key: string, record: SessionRecord): void {
    this.#entries.set(key, record);
    if (this.#entries.size > this.#capacity)
      this.#entries.delete(this.#entries.keys().next().value as string);
  }

  /** SessionCache.peek: undefined outside a look (ask the store), null once expired at `now`. */
  peek(key: string, now: number): SessionRecord | null | undefined {
    if (!this.#look.open) return undefined;
    const record = this.#entries.get(key);
    if (record === undefined) return undefined;
    if (record.expiresAt > now) return record;
    this.#entries.delete(key);
    return null;
  }

  forget(key: string): void {
    this.#entries.delete(key);
  }

  clear(): void {
    this.#entries.clear();
  }
}
