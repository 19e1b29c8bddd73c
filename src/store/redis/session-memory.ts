// Sessions in Redis with the process's session memory (freshness/session-memory.ts), for any number
// of instances and the CLI. A catch-up is one script call (shared by the requests of a turn:
// freshness/gate.ts) reading a page of the deletion log (session-log.ts), and the barrier that
// proves every key event before it was heard (key-events.ts): what the service deleted comes from
// the log, what anyone else did to a session key from the events. A session read enters memory only
// with the log's position read in the same script and no event about its key meanwhile.
import type { Redis } from 'ioredis';
import type { LogPage } from '../freshness/change-log.ts';
import { type AnswerWindow, CatchUpRounds } from '../freshness/gate.ts';
import { rememberingSessions, SessionMemory } from '../freshness/session-memory.ts';
import type { SessionMemoryAnswers, SessionStore } from '../types.ts';
import { mapped } from './driver.ts';
import { SessionKeyEvents } from './key-events.ts';
import type { Keys, Scripts } from './scripts.ts';
import { HASH_HEX } from './session-log.ts';
import { redisSessionStore } from './sessions.ts';

/** The hashes of a page's entries (each entry: the hashes one script deleted, concatenated). */
function* entryHashes(reply: readonly string[], from: number): Generator<string> {
  for (let i = from; i < reply.length; i++) {
    const entry = reply[i]!;
    for (let at = 0; at < entry.length; at += HASH_HEX) yield entry.slice(at, at + HASH_HEX);
  }
}

export interface RedisSessionMemory {
  readonly store: SessionStore;
  readonly answers: SessionMemoryAnswers;
  readonly rounds: CatchUpRounds;
  readonly events: SessionKeyEvents;
}

/** The Redis session store with memory; `onState` hears when key events stop or flow again. */
export function redisSessionMemory(
  client: Redis,
  k: Keys,
  run: Scripts,
  window: AnswerWindow,
  capacity: number,
  onState: (flowing: boolean, why: string) => void,
): RedisSessionMemory {
  const memory = new SessionMemory(window, capacity);
  const reader = memory.log;
  const events = new SessionKeyEvents(client, k, {
    onSessionKey: (idHex) => memory.forget(idHex),
    onLost: () => memory.clear(),
    onState,
  });
  const rounds = new CatchUpRounds({ batch: true });
  rounds.add(async () => {
    const barrier = events.barrier();
    // Handled below; a failed script must not leave the barrier's rejection unhandled.
    barrier.passed.catch(() => {});
    const reply = (await mapped(
      run.sessionLogPage([k.logState, k.log, barrier.key], [reader.seq]),
    )) as string[];
    await barrier.passed;
    const page: LogPage<string> = {
      epoch: reply[0] ?? '',
      seq: Number(reply[1]),
      first: reply[2] === '' || reply[2] === undefined ? null : Number(reply[2]),
      markAtPosition: reply[3] === '' || reply[3] === undefined ? null : reply[3],
      lastMark: reply[4] === '' || reply[4] === undefined ? null : reply[4],
      entries: entryHashes(reply, 5),
    };
    reader.apply(page);
  });

  const store = redisSessionStore(client, k, run);
  return {
    store: rememberingSessions(
      store,
      async (idHash, now) => {
        const key = idHash.toString('hex');
        const began = events.fillBegins(key);
        let reply: string[];
        let clean = false;
        try {
          reply = (await mapped(run.sessionRead([k.session(key), k.logState], []))) as string[];
        } finally {
          // Counted off even when the read failed.
          clean = events.filled(key, began);
        }
        const [username, expiresAt, epoch, seq] = reply;
        const live = username !== '' && username !== undefined && Number(expiresAt) > now;
        return {
          record: live ? { username, expiresAt: Number(expiresAt) } : null,
          at: clean && epoch !== '' ? { epoch: epoch ?? '', seq: Number(seq) } : null,
        };
      },
      memory,
    ),
    answers: memory,
    rounds,
    events,
  };
}
