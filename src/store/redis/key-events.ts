// Session keys that change or vanish behind the service's back, made observable to each instance's
// session memory (session-memory.ts, docs/freshness.md). The deletion log (session-log.ts) names what
// the service's own scripts delete; anything else done to a session key — an operator's DEL or
// UNLINK, an EXPIRE or a changed field, an expiry, an eviction, a RENAME — is published by Redis as a
// keyspace event (https://redis.io/docs/latest/develop/use/keyspace-notifications/), which every
// instance hears on a subscribed connection of its own and answers by forgetting that session.
//
// Why this is exact, not merely prompt:
// - Ordering. Redis queues a keyspace event to the subscribers while it runs the command that caused
//   it, and delivers one connection's messages in order. Each catch-up's script (the log page) ends by
//   writing and deleting a barrier key of its own; its "del" event is generated after everything the
//   catch-up must see, so once that event has arrived every earlier event has been handled. A
//   catch-up is complete only when both its script's reply and its barrier event are in.
// - Events switched off (notify-keyspace-events changed, a failover to a server configured without
//   them): the barrier event never comes, the catch-up fails after BARRIER_TIMEOUT_MS, and requests
//   are answered by Redis itself until a barrier comes through again (tried every REARM_MS); memory
//   is then emptied, since what happened in between is unknown.
// - The subscribed connection lost (Redis also drops a subscriber that does not read, as a process
//   the host does not run): the same (events may have been lost with it). A catch-up whose barrier
//   began before the loss fails even when its event comes through the new subscription.
// - A read racing an event: a session read while an event about its key arrives may be older than the
//   event; such a read is not kept (fills are watched per key while in flight).
// Redis's own data lost (a restart without persistence, FLUSHALL) is the log's epoch (session-log.ts).
import { randomBytes } from 'node:crypto';
import type { Redis } from 'ioredis';
import { deadlineAfterPoll, duplicateClient, inTime } from './driver.ts';
import type { Keys } from './scripts.ts';

/**
 * The event classes the memory needs (notify-keyspace-events): K keyspace channels, g generic (del,
 * expire, rename…), h hash fields, x expired, e evicted. `A` stands for every class but K, E, m, n.
 */
const NEEDED_FLAGS = ['K', 'g', 'h', 'x', 'e'] as const;
/** How long a catch-up waits for its barrier event before concluding that events do not flow. */
const BARRIER_TIMEOUT_MS = 2000;
/** How often an instance whose events stopped tries to get them flowing again. */
const REARM_MS = 5000;

/** The flags `current` lacks among those the memory needs (`A` counts for g, h, x and e). */
export function missingEventFlags(current: string): string {
  const has = (flag: string) => current.includes(flag) || (flag !== 'K' && current.includes('A'));
  return NEEDED_FLAGS.filter((flag) => !has(flag)).join('');
}

/**
 * Makes sure Redis publishes the events the memory needs: adds the missing flags to
 * notify-keyspace-events (keeping whatever others are set). Says what it found or did; a Redis that
 * refuses CONFIG (a managed service) is left as it is, and the barrier then tells whether events flow.
 */
async function ensureKeyEvents(client: Redis): Promise<'on' | 'turned on' | 'unknown'> {
  try {
    const reply = (await inTime(client.call('CONFIG', 'GET', 'notify-keyspace-events'))) as string[];
    const current = reply[1] ?? '';
    const missing = missingEventFlags(current);
    if (missing === '') return 'on';
    await inTime(client.call('CONFIG', 'SET', 'notify-keyspace-events', `${current}${missing}`));
    return 'turned on';
  } catch {
    return 'unknown';
  }
}

/** A glob pattern matching `text` literally (PSUBSCRIBE patterns are globs). */
const globLiteral = (text: string) => text.replace(/[*?[\]\\]/g, (c) => `\\${c}`);

interface EventHandlers {
  /** A session key (its hex id) changed or vanished: forget it. */
  readonly onSessionKey: (idHex: string) => void;
  /** Events may have been missed: forget everything. */
  readonly onLost: () => void;
  /** Events stopped or resumed (logged by the store's owner). */
  readonly onState: (flowing: boolean, why: string) => void;
}

/** The key events of one instance's session memory. */
export class SessionKeyEvents {
  readonly #main: Redis;
  readonly #handlers: EventHandlers;
  readonly #sessionPrefix: string;
  readonly #channelPrefix: string;
  readonly #barrierPrefix: string;
  #subscriber: Redis | null = null;
  #flowing = false;
  /** What was last reported (onState), so that each change is reported once. */
  #reported: boolean | null = null;
  #closed = false;
  #rearm: NodeJS.Timeout | null = null;
  #barriers = 0;
  /** The barrier key awaited, and its resolver. */
  readonly #awaited = new Map<string, () => void>();
  /** Moves whenever events may have been missed: a fill begun before must not be kept. */
  #epoch = 0;
  /** Per key with a fill in flight: how many, and whether an event about it arrived meanwhile. */
  readonly #fills = new Map<string, { count: number; dirty: boolean }>();

  constructor(main: Redis, k: Keys, handlers: EventHandlers) {
    this.#main = main;
    this.#handlers = handlers;
    this.#sessionPrefix = k.sessionPrefix;
    const db = main.options.db ?? 0;
    this.#channelPrefix = `__keyspace@${db}__:`;
    // Never a session id (64 hex digits): a "~" cannot appear in one.
    this.#barrierPrefix = `${k.sessionPrefix}~barrier:${randomBytes(8).toString('hex')}:`;
  }

  /** True while events flow: only then may the memory answer. */
  get flowing(): boolean {
    return this.#flowing;
  }

  /** Subscribes and proves that events flow (else the memory stays shut and a later try follows). */
  async start(): Promise<void> {
    const subscriber = duplicateClient(this.#main, { autoResubscribe: false });
    this.#subscriber = subscriber;
    subscriber.on('error', () => {});
    subscriber.on('pmessage', (_pattern: string, channel: string, event: string) =>
      this.#heard(channel, event),
    );
    try {
      await subscriber.connect();
    } catch {
      this.#stop('the subscribed connection failed');
    }
    // A connection lost may have lost events with it; each reconnection subscribes and proves again.
    subscriber.on('close', () => this.#stop('the subscribed connection closed'));
    subscriber.on('ready', () => void this.#arm());
    if (subscriber.status === 'ready') await this.#arm();
  }

  /** A fill of `idHex` begins: returns what `filled` needs to tell whether it may be kept. */
  fillBegins(idHex: string): number {
    const fill = this.#fills.get(idHex);
    if (fill === undefined) this.#fills.set(idHex, { count: 1, dirty: false });
    else fill.count++;
    return this.#epoch;
  }

  /** The fill of `idHex` begun at `epoch` ended: true when no event about it can have been missed. */
  filled(idHex: string, epoch: number): boolean {
    const fill = this.#fills.get(idHex)!;
    const clean = !fill.dirty && epoch === this.#epoch && this.#flowing;
    if (--fill.count === 0) this.#fills.delete(idHex);
    return clean;
  }

  /**
   * A fresh barrier key for a catch-up's script, and a promise resolving when its "del" event has
   * arrived (every earlier event handled), rejecting when events do not flow.
   */
  barrier(): { readonly key: string; readonly passed: Promise<void> } {
    const key = `${this.#barrierPrefix}${++this.#barriers}`;
    if (!this.#flowing) return { key, passed: Promise.reject(new Error('key events do not flow')) };
    // Events that stop after this instant (#stop moves the epoch) may be lost, and memory is emptied
    // only once a new subscription has proven itself (#arm): until then a barrier event coming through
    // that new subscription (the script resent after a reconnect) says nothing of the lost ones.
    const epoch = this.#epoch;
    const passed = new Promise<void>((resolve, reject) => {
      const deadline = deadlineAfterPoll(BARRIER_TIMEOUT_MS, () => {
        this.#awaited.delete(key);
        reject(new Error('no barrier event'));
        // A barrier of a subscription since replaced proves nothing of the current one.
        if (epoch === this.#epoch) this.#stop('a barrier event did not arrive');
      });
      this.#awaited.set(key, () => {
        deadline.cancel();
        this.#awaited.delete(key);
        if (epoch === this.#epoch) resolve();
        else reject(new Error('key events were interrupted'));
      });
    });
    return { key, passed };
  }

  async close(): Promise<void> {
    this.#closed = true;
    this.#flowing = false;
    if (this.#rearm !== null) clearTimeout(this.#rearm);
    const subscriber = this.#subscriber;
    if (subscriber !== null && subscriber.status !== 'end') subscriber.disconnect();
  }

  #heard(channel: string, event: string): void {
    const key = channel.slice(this.#channelPrefix.length);
    if (key.startsWith(this.#barrierPrefix)) {
      if (event === 'del') this.#awaited.get(key)?.();
      return;
    }
    if (!key.startsWith(this.#sessionPrefix)) return;
    const idHex = key.slice(this.#sessionPrefix.length);
    const fill = this.#fills.get(idHex);
    if (fill !== undefined) fill.dirty = true;
    this.#handlers.onSessionKey(idHex);
  }

  /**
   * Turns events on where needed (a Redis restarted without its configuration has them off),
   * subscribes, then proves with a barrier of its own that events flow; only then empties memory and
   * opens.
   */
  async #arm(): Promise<void> {
    const subscriber = this.#subscriber;
    if (subscriber === null || this.#closed) return;
    try {
      await ensureKeyEvents(this.#main);
      // Session keys (64 hex digits) and this instance's own barriers only: another instance's
      // barrier events would cost Redis a message and this process a read for each of its catch-ups.
      // One command: both patterns hold before the barrier below can be heard.
      await inTime(
        subscriber.psubscribe(
          `${globLiteral(this.#channelPrefix + this.#sessionPrefix)}[0-9a-f]*`,
          `${globLiteral(this.#channelPrefix + this.#barrierPrefix)}*`,
        ),
      );
      const key = `${this.#barrierPrefix}arm`;
      const arrived = new Promise<void>((resolve, reject) => {
        const deadline = deadlineAfterPoll(BARRIER_TIMEOUT_MS, () => reject(new Error('no event')));
        this.#awaited.set(key, () => {
          deadline.cancel();
          this.#awaited.delete(key);
          resolve();
        });
      });
      // Awaited below; if the write fails first, its timeout must not surface as unhandled.
      arrived.catch(() => {});
      await inTime(this.#main.multi().set(key, '1').del(key).exec());
      await arrived;
    } catch {
      this.#awaited.delete(`${this.#barrierPrefix}arm`);
      this.#stop('Redis publishes no keyspace events (notify-keyspace-events)');
      return;
    }
    if (this.#rearm !== null) {
      clearTimeout(this.#rearm);
      this.#rearm = null;
    }
    // Whatever happened before this instant was missed: start from an empty memory.
    this.#epoch++;
    this.#handlers.onLost();
    this.#flowing = true;
    this.#report(true, 'keyspace events flow');
  }

  #report(flowing: boolean, why: string): void {
    if (this.#reported === flowing) return;
    this.#reported = flowing;
    this.#handlers.onState(flowing, why);
  }

  #stop(why: string): void {
    this.#flowing = false;
    this.#epoch++;
    for (const fill of this.#fills.values()) fill.dirty = true;
    if (!this.#closed) this.#report(false, why);
    if (this.#closed || this.#rearm !== null) return;
    this.#rearm = setTimeout(() => {
      this.#rearm = null;
      if (this.#subscriber?.status === 'ready') void this.#arm();
    }, REARM_MS);
    this.#rearm.unref();
  }
}
