// When each session was last seen (contract §9: accurate to 10 minutes, and recording it must not
// slow the check down). A request only notes the sighting in memory — a Map lookup, and a write to it
// at most once per session per RECORD_INTERVAL_MS — and a timer hands the batch to the store every
// FLUSH_INTERVAL_MS, off every request's path. Worst case a sighting reaches the store
// RECORD_INTERVAL_MS + FLUSH_INTERVAL_MS late (6 minutes); the listing adds what is still in memory.
import { setImmediate as nextTurn } from 'node:timers/promises';
import type { SessionSighting, SessionStore } from '../store/types.ts';

/** A session is written at most once per this long (per process). */
export const RECORD_INTERVAL_MS = 5 * 60 * 1000;
/** How often the noted sightings are written. */
export const FLUSH_INTERVAL_MS = 60 * 1000;
/**
 * Sightings per store call: SQLite writes synchronously, so a large batch (10 000 sessions seen in a
 * minute) is cut into short transactions with the event loop free in between.
 */
export const FLUSH_BATCH = 500;

export class LastSeen {
  readonly #store: SessionStore;
  readonly #now: () => number;
  readonly #onError: (err: unknown) => void;
  /** Session (hex of its hash) → when it was last noted for writing. */
  readonly #noted = new Map<string, number>();
  /** Noted since the last flush: session hex → sighting. */
  #pending = new Map<string, SessionSighting>();
  #timer: NodeJS.Timeout | null = null;

  constructor(store: SessionStore, now: () => number, onError: (err: unknown) => void) {
    this.#store = store;
    this.#now = now;
    this.#onError = onError;
  }

  /** The session was seen at `now` (cheap: called on every authenticated request). */
  note(idHash: Buffer, now: number): void {
    this.noteKey(idHash.toString('hex'), now);
  }

  /** note() for the hex of the session's hash (sessionKey): the hash's Buffer is made only when noted. */
  noteKey(key: string, now: number): void {
    const noted = this.#noted.get(key);
    if (noted !== undefined && now - noted < RECORD_INTERVAL_MS) return;
    this.#noted.set(key, now);
    this.#pending.set(key, { idHash: Buffer.from(key, 'hex'), at: now });
    if (this.#timer === null) {
      this.#timer = setInterval(() => void this.flush(), FLUSH_INTERVAL_MS);
      this.#timer.unref();
    }
  }

  /** A session just created counts as seen: nothing to write until the next interval. */
  started(idHash: Buffer, now: number): void {
    this.#noted.set(idHash.toString('hex'), now);
  }

  /** A sighting noted but not yet written, if any (the listing shows it). */
  pendingAt(idHash: Buffer): number | null {
    return this.#pending.get(idHash.toString('hex'))?.at ?? null;
  }

  /** Writes what was noted; a failure is reported and the batch dropped (the next sighting retries). */
  async flush(now = this.#now()): Promise<void> {
    for (const [key, at] of this.#noted) if (now - at >= RECORD_INTERVAL_MS) this.#noted.delete(key);
    if (this.#pending.size === 0) return;
    const sightings = [...this.#pending.values()];
    this.#pending = new Map();
    for (let start = 0; start < sightings.length; start += FLUSH_BATCH) {
      const batch = sightings.slice(start, start + FLUSH_BATCH);
      try {
        await this.#store.touch(batch);
      } catch (err) {
        // Forgotten, so that the next sighting of these sessions is noted and written again.
        for (const { idHash } of sightings.slice(start)) this.#noted.delete(idHash.toString('hex'));
        this.#onError(err);
        return;
      }
      if (start + FLUSH_BATCH < sightings.length) await nextTurn();
    }
  }

  /** Stops the timer and writes what is left (at shutdown, before the stores close). */
  async close(): Promise<void> {
    if (this.#timer !== null) clearInterval(this.#timer);
    this.#timer = null;
    await this.flush();
  }
}
