// Contract §3: guesses in flight are counted where the counters live, so a burst of parallel guesses
// for one username puts at most 5 through to IMAP however many processes and instances serve it. Real
// clusters (WORKERS=2), against the harness Dovecot with its real 2 s failure delay (the guesses stay
// in flight together), counted at the IMAP server by a TCP relay.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { dovecotEnv } from '../helpers/app.ts';
import { postLogin, startCluster, type TestCluster } from '../helpers/cluster.ts';
import { type Dovecot, startDovecot } from '../helpers/dovecot.ts';
import { type FaultProxy, startFaultProxy } from '../helpers/fault-proxy.ts';
import { type StoreData, storeOf, type TestStore } from '../helpers/stores.ts';

const GUESSES = 12;
const USER_LIMIT = 5;

let dovecot: Dovecot;
before(async () => {
  dovecot = await startDovecot({ authFailureDelay: 2 });
});
after(async () => {
  await dovecot?.stop();
});

// Not every store: one real cluster for each place the counters live, shared across processes — a
// SQLite file (one machine: one instance), PostgreSQL and Redis (two instances). Through PgBouncer
// the counting runs the same statements on the same PostgreSQL, and store/contract proves guesses in
// flight counted through two handles on every store.
const SETUPS: readonly { name: string; instances: number; store: TestStore }[] = [
  { name: 'SQLite, one instance of WORKERS=2', instances: 1, store: storeOf('sqlite') },
  { name: 'PostgreSQL, two instances of WORKERS=2', instances: 2, store: storeOf('postgres') },
  { name: 'PostgreSQL + Redis, two instances of WORKERS=2', instances: 2, store: storeOf('redis-postgres') },
];

for (const setup of SETUPS) {
  describe(setup.name, () => {
    let relay: FaultProxy;
    let clusters: TestCluster[] = [];
    let data: StoreData | undefined;
    before(async () => {
      relay = await startFaultProxy(dovecot.tlsPort);
      data = await setup.store.create();
      const env = { ...data.env, ...dovecotEnv(dovecot), IMAP_PORT: String(relay.port) };
      // One after the other: the first migrates the shared database.
      for (let i = 0; i < setup.instances; i++) clusters.push(await startCluster(env, 2));
    });
    after(async () => {
      await Promise.all(clusters.map((cluster) => cluster.stop()));
      clusters = [];
      await relay?.close();
      await data?.drop();
    });

    test(`${GUESSES} parallel distinct wrong passwords for one username: at most ${USER_LIMIT} reach IMAP, the rest 429 with a true Retry-After`, async () => {
      const before = relay.accepted;
      const answers = await Promise.all(
        Array.from({ length: GUESSES }, (_, i) =>
          postLogin(clusters[i % clusters.length]!.port, 'alice', `wrong-guess-${i}`),
        ),
      );
      const reached = relay.accepted - before;
      const statuses = answers.map((answer) => answer.status);
      assert.ok(reached <= USER_LIMIT, `${reached} guesses reached IMAP (statuses ${statuses.join(' ')})`);
      assert.ok(reached >= 1, 'the first guesses were let through');
      assert.equal(
        statuses.filter((status) => status === 403).length,
        reached,
        'every admitted guess was refused',
      );
      const throttled = answers.filter((answer) => answer.status === 429);
      assert.equal(throttled.length, GUESSES - reached);
      for (const answer of throttled) {
        // When the guesses in flight are over at the latest (the attempt's deadline), not 1 s.
        const seconds = Number(answer.headers['retry-after']);
        assert.ok(seconds > 1 && seconds <= 900, `Retry-After: ${answer.headers['retry-after']}`);
        assert.deepEqual(JSON.parse(answer.body), {
          detail: `Request was throttled. Expected available in ${seconds} seconds.`,
        });
      }
    });
  });
}
