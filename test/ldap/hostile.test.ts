// Contract §8: every trick of a hostile directory (test/helpers/ldap-hostile.ts: a TLS-terminating
// relay in front of the real slapd, trusted through LDAP_CA_FILE), through the real app. Each ends
// in 403 {"detail": "Cannot log you in"} with the right failure class and reason, before the
// deadline, with no socket left open and no session, even with alice's right password; where the
// trick strikes the service account's bind, /readyz answers 503 naming the directory. A bind
// answer counts only as the answer to our own bind, already sent, over TLS (contract §8); the
// entry a search finds counts only if it is one, and under LDAP_BASE_DN.

import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { BackendFailure } from '../../src/backends/authenticator.ts';
import { createAuthenticator } from '../../src/backends/build.ts';
import { servingBackends } from '../../src/config/backends/chain.ts';
import { loadConfig } from '../../src/config/config.ts';
import { loginAs, startTestApp, type TestApp } from '../helpers/app.ts';
import { makeTestCertificates, type TestCertificates } from '../helpers/certs.ts';
import { OP } from '../helpers/ldap-ber.ts';
import { type HostileLdapOptions, startHostileLdap } from '../helpers/ldap-hostile.ts';
import { referenceTimer } from '../helpers/reference-timer.ts';
import { recordSecrets } from '../helpers/secrets.ts';
import {
  directoryUser,
  PEOPLE_DN,
  SERVICE_DN,
  SERVICE_PASSWORD,
  type Slapd,
  startSlapd,
} from '../helpers/slapd.ts';

// Every trick must be caught as what it is, never by the deadline: a long one keeps a loaded
// machine from turning a quick refusal into a timeout (whose reason would say so).
const TIMEOUT_MS = 30_000;
const SLACK_MS = 2500;
const PASSWORD = directoryUser('alice').password;
const EARLY = /^an answer for message id \d+ before that request was sent$/;
const NOT_UNDER = 'the entry found is not under LDAP_BASE_DN';

interface Trick {
  readonly name: string;
  readonly server: Omit<HostileLdapOptions, 'cert' | 'serviceDn'>;
  readonly mode: 'direct' | 'search';
  readonly failure: BackendFailure;
  readonly reason: string | RegExp;
  /** The trick strikes the service account's bind, which the readiness probe makes too. */
  readonly probe?: boolean;
  /** The user's bind is never sent (the search's answer was refused first). */
  readonly noUserBind?: boolean;
}

const bindTricks = (target: 'user' | 'service'): Trick[] => {
  const mode = target === 'user' ? 'direct' : 'search';
  const on = target === 'user' ? "the user's bind" : "the service account's bind";
  const probe = target === 'service';
  const service = (reason: string) => (probe ? `service account bind refused (${reason})` : reason);
  return [
    {
      name: `${on} answered for another message id`,
      trick: 'foreign-id',
      failure: 'upstream_misconfigured',
      reason: EARLY,
    },
    {
      name: `${on} answered with message id 0`,
      trick: 'id-zero',
      failure: 'upstream_misconfigured',
      reason: 'an unsolicited message that is not a Notice of Disconnection',
    },
    {
      name: `an unsolicited Notice of Disconnection at ${on}`,
      trick: 'notice',
      failure: 'upstream_unavailable',
      reason: 'Notice of Disconnection (LDAP result 52)',
    },
    {
      name: `${on} answered with a referral`,
      trick: 'referral',
      failure: 'upstream_misconfigured',
      reason: service('LDAP result 10'),
    },
    {
      name: `${on} answered with a SearchResultDone`,
      trick: 'wrong-op',
      failure: 'upstream_misconfigured',
      reason: 'protocolOp 0x65 in answer to 0x60',
    },
    {
      name: `garbage in answer to ${on}`,
      trick: 'garbage',
      failure: 'upstream_misconfigured',
      reason: 'a message that is not a SEQUENCE',
    },
    {
      name: `a 2 GiB message announced in answer to ${on}`,
      trick: 'oversize',
      failure: 'upstream_misconfigured',
      reason: /^a message of \d+ bytes \(limit 65536\)$/,
    },
    {
      name: `${on} answered in indefinite-length BER`,
      trick: 'indefinite',
      failure: 'upstream_misconfigured',
      reason: 'an indefinite length',
    },
  ].map(({ trick, ...rest }) => ({ ...rest, server: { trick, target }, mode, probe }) as Trick);
};

const TRICKS: readonly Trick[] = [
  ...bindTricks('user'),
  ...bindTricks('service'),
  {
    name: 'a Notice of Disconnection over StartTLS',
    server: { trick: 'notice', starttls: true },
    mode: 'direct',
    failure: 'upstream_unavailable',
    reason: 'Notice of Disconnection (LDAP result 52)',
  },
  {
    name: 'a search answered with two entries',
    server: { trick: 'two-entries' },
    mode: 'search',
    failure: 'bad_credentials',
    reason: 'several entries match',
    noUserBind: true,
  },
  ...[
    'uid=alice,ou=services,dc=example,dc=org',
    'cn=clubhouse,ou=services,dc=example,dc=org',
    'cn=x\\,ou=people,dc=example,dc=org',
    'uid=alice,ou=people,dc=example,dc=org,dc=evil',
  ].map(
    (dn): Trick => ({
      name: `a search answered with an entry outside the base (${dn})`,
      server: { trick: 'outside-base', dn },
      mode: 'search',
      failure: 'upstream_misconfigured',
      reason: NOT_UNDER,
      noUserBind: true,
    }),
  ),
  {
    name: 'a search answered with an entry whose DN does not parse',
    server: { trick: 'outside-base', dn: 'alice' },
    mode: 'search',
    failure: 'upstream_misconfigured',
    reason: 'the entry found has a DN that does not parse',
    noUserBind: true,
  },
  {
    name: 'a search answered with a reference instead of the entry',
    server: { trick: 'reference' },
    mode: 'search',
    failure: 'bad_credentials',
    reason: 'no entry matches',
    noUserBind: true,
  },
  {
    name: 'a search ended with a referral',
    server: { trick: 'search-referral' },
    mode: 'search',
    failure: 'upstream_misconfigured',
    reason: 'LDAP result 10',
    noUserBind: true,
  },
  {
    name: "a success for the bind's predicted id riding on the search's end",
    server: { trick: 'early-answer' },
    mode: 'search',
    failure: 'upstream_misconfigured',
    reason: EARLY,
    noUserBind: true,
  },
  {
    name: "a success for the bind's predicted id as soon as the search arrives",
    server: { trick: 'answer-on-search' },
    mode: 'search',
    failure: 'upstream_misconfigured',
    reason: EARLY,
    noUserBind: true,
  },
];

function lastAudit(t: TestApp): { failure?: string; reason?: string; backend?: string } {
  const audits = t.logs.map((line) => JSON.parse(line)).filter((entry) => entry.audit === 'login');
  return audits.at(-1) ?? {};
}

describe('a hostile directory (TLS-terminating, trusted certificate) in front of the real slapd', () => {
  let dir: string;
  let certs: TestCertificates;
  let slapd: Slapd;
  before(async () => {
    recordSecrets(SERVICE_PASSWORD);
    dir = mkdtempSync(join(tmpdir(), 'clubhouse-hostile-ldap-'));
    [certs, slapd] = await Promise.all([makeTestCertificates(dir), startSlapd()]);
  });
  after(async () => {
    await slapd?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  const start = (server: Trick['server']) =>
    startHostileLdap(slapd.plainPort, { ...server, cert: certs, serviceDn: SERVICE_DN });

  const appFor = (port: number, mode: Trick['mode'], starttls: boolean) => {
    const env: Record<string, string> = {
      AUTH_BACKENDS: 'ldap',
      LDAP_URL: `${starttls ? 'ldap' : 'ldaps'}://localhost:${port}`,
      LDAP_CA_FILE: certs.caFile,
      LDAP_TIMEOUT_MS: String(TIMEOUT_MS),
      ...(mode === 'direct'
        ? { LDAP_USER_DN: `uid={username},${PEOPLE_DN}` }
        : { LDAP_BIND_DN: SERVICE_DN, LDAP_BIND_PASSWORD: SERVICE_PASSWORD, LDAP_BASE_DN: PEOPLE_DN }),
    };
    const authenticator = createAuthenticator(servingBackends(loadConfig(env).auth.backends), {
      probeTtlMs: 0,
    });
    return startTestApp({ env, authenticator });
  };

  for (const trick of TRICKS) {
    for (const [whose, password] of [
      ['right', PASSWORD],
      ['wrong', 'not-alices-password'],
    ] as const) {
      test(`${trick.name} (${whose} password): 403 ${trick.failure}, in time, nothing open, no session`, async () => {
        const server = await start(trick.server);
        const t = await appFor(server.port, trick.mode, trick.server.starttls === true);
        try {
          const reference = referenceTimer(TIMEOUT_MS);
          const { response, sessionid } = await loginAs(t.fastify, 'alice', password);
          const atDeadline = reference.fired;
          reference.cancel();
          assert.equal(response.statusCode, 403, JSON.stringify(lastAudit(t)));
          assert.deepEqual(response.json(), { detail: 'Cannot log you in' });
          assert.equal(sessionid, '');
          assert.equal(await t.stores.sessions.countActive(Date.now()), 0);
          const audit = lastAudit(t);
          assert.equal(audit.failure, trick.failure, JSON.stringify(audit));
          if (typeof trick.reason === 'string') assert.equal(audit.reason, trick.reason);
          else assert.match(audit.reason ?? '', trick.reason);
          assert.equal(audit.backend, 'ldap');
          assert.equal(atDeadline, false, 'caught as what it is, not by the deadline');
          if (trick.noUserBind === true) assert.deepEqual(server.binds(), [SERVICE_DN]);
          await server.drained(SLACK_MS);
          const ready = await t.fastify.inject({ url: '/readyz' });
          if (trick.probe === true) {
            assert.equal(ready.statusCode, 503, ready.body);
            assert.deepEqual(ready.json().failing, ['ldap']);
            assert.ok(ready.json().checks.ldap.startsWith(`${trick.failure}: `), ready.json().checks.ldap);
          } else {
            assert.equal(ready.statusCode, 200, ready.body);
          }
          await server.drained(SLACK_MS);
        } finally {
          await t.close();
          await server.close();
        }
      });
    }
  }

  for (const starttls of [false, true]) {
    test(`the relay that plays no trick is harmless (${starttls ? 'StartTLS' : 'LDAPS'}): right password 200, wrong 403`, async () => {
      for (const mode of ['direct', 'search'] as const) {
        const server = await start({ trick: 'none', starttls });
        const t = await appFor(server.port, mode, starttls);
        try {
          const ok = await loginAs(t.fastify, 'alice', PASSWORD);
          assert.equal(ok.response.statusCode, 200, JSON.stringify(lastAudit(t)));
          assert.equal(ok.response.body, '"alice"');
          const wrong = await loginAs(t.fastify, 'bob', 'not-bobs-password');
          assert.equal(wrong.response.statusCode, 403);
          assert.equal(lastAudit(t).failure, 'bad_credentials');
          const ready = await t.fastify.inject({ url: '/readyz' });
          assert.equal(ready.statusCode, 200, ready.body);
          await server.drained(SLACK_MS);
          // RFC 4511 §4.3: each of the three connections (two logins, one probe) ended with an unbind.
          assert.equal(server.requests.filter((r) => r.op === OP.unbindRequest).length, server.accepted);
          assert.equal(server.accepted, 3);
        } finally {
          await t.close();
          await server.close();
        }
      }
    });
  }
});
