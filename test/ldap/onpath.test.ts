// StartTLS injection (docs/security.md: the LDAP path): an on-path attacker in front of the real
// slapd (test/helpers/ldap-relay.ts), with LDAP_URL=ldap://… and required StartTLS. Bytes appended
// behind the plaintext StartTLS answer must never count once TLS is up (contract §8, the
// CVE-2011-0411 class): a forged BindResponse prefix that the server's real invalidCredentials would
// complete inside TLS, a whole forged success, half of one, one byte, for the next bind's message id,
// id 1 and id 0. Each ends as `upstream_misconfigured` at once (not at the deadline, where it would
// be `upstream_unavailable` and free to retry), with nothing left open. A stripped StartTLS, or an
// answer to it forged by the attacker (a refusal, another id or operation, a Notice of Disconnection,
// garbage), never leads to a bind in clear. The relay that only relays changes nothing: the right
// password still logs in. Through the HTTP API, on every store: ldap/onpath-api.test.ts.

import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { VerifyResult } from '../../src/backends/authenticator.ts';
import { ldapLoginOnce, probeLdap } from '../../src/backends/ldap/authenticator.ts';
import type { LdapSettings } from '../../src/backends/ldap/settings.ts';
import { backendTls } from '../../src/backends/tls.ts';
import {
  bindResponse,
  extendedResponse,
  FrameSplitter,
  noticeOfDisconnection,
  OP,
  STARTTLS_OID,
} from '../helpers/ldap-ber.ts';
import {
  forgedSuccessPrefix,
  type LdapRelay,
  type LdapRelayOptions,
  startLdapRelay,
} from '../helpers/ldap-relay.ts';
import { referenceTimer } from '../helpers/reference-timer.ts';
import {
  directoryUser,
  PEOPLE_DN,
  SERVICE_DN,
  SERVICE_PASSWORD,
  type Slapd,
  startSlapd,
} from '../helpers/slapd.ts';

// The deadline of every trick that must be caught as what it is: long, so that a loaded machine
// never turns a quick refusal into a timeout (whose reason would say so).
const PATIENT_TIMEOUT_MS = 30_000;
// The deadline of a trick only the deadline can end (a swallowed StartTLS request).
const STALL_TIMEOUT_MS = 1500;
const SLACK_MS = 2500;
const INJECTED = 'plaintext injected behind the StartTLS answer';

interface Injection {
  readonly name: string;
  readonly inject: (startTlsId: number) => Buffer;
}

const INJECTIONS: readonly Injection[] = [
  {
    name: 'a forged success prefix that the real answer completes',
    inject: (id) => forgedSuccessPrefix(id + 1),
  },
  { name: "a whole forged success for the next bind's id", inject: (id) => bindResponse(id + 1, 0) },
  { name: 'a whole forged success for id 1', inject: () => bindResponse(1, 0) },
  { name: 'a whole forged success for id 0', inject: () => bindResponse(0, 0) },
  { name: 'half of a forged success', inject: (id) => bindResponse(id + 1, 0).subarray(0, 7) },
  { name: 'one byte', inject: () => Buffer.from([0x30]) },
];

let slapd: Slapd;
before(async () => {
  slapd = await startSlapd();
});
after(async () => {
  await slapd?.stop();
});

function settingsAt(port: number, mode: 'direct' | 'search', timeoutMs: number): LdapSettings {
  return {
    url: `ldap://localhost:${port}`,
    security: 'starttls',
    allowPlaintext: false,
    caFile: slapd.caFile,
    userDn: mode === 'direct' ? `uid={username},${PEOPLE_DN}` : null,
    bindDn: mode === 'search' ? SERVICE_DN : null,
    bindPassword: mode === 'search' ? SERVICE_PASSWORD : null,
    baseDn: mode === 'search' ? PEOPLE_DN : null,
    userFilter: '(uid={username})',
    timeoutMs,
    maxConcurrency: 4,
    queueLimit: 10,
  };
}

const failureOf = (result: VerifyResult) => (result.ok ? 'ok' : result.failure);
const reasonOf = (result: VerifyResult) => (result.ok ? '' : result.reason);

/** One login through a fresh relay; resolves once the relay saw every connection closed. */
async function throughRelay(
  options: LdapRelayOptions,
  mode: 'direct' | 'search',
  timeoutMs: number,
  username: string,
  password: string,
): Promise<{ result: VerifyResult; relay: LdapRelay; atDeadline: boolean }> {
  const relay = await startLdapRelay(slapd.plainPort, options);
  try {
    const settings = settingsAt(relay.port, mode, timeoutMs);
    const reference = referenceTimer(timeoutMs);
    const result = await ldapLoginOnce(settings, backendTls('localhost', slapd.caFile), username, password);
    const atDeadline = reference.fired;
    reference.cancel();
    await relay.drained(SLACK_MS);
    return { result, relay, atDeadline };
  } finally {
    await relay.close();
  }
}

describe('bytes injected behind the StartTLS answer never count after it', () => {
  const alice = directoryUser('alice').password;
  for (const injection of INJECTIONS) {
    for (const mode of ['direct', 'search'] as const) {
      for (const [who, username, password] of [
        ['alice, wrong password', 'alice', 'not-alices-password'],
        ['a user the directory does not have', 'mallory', 'anything'],
        ['alice, right password', 'alice', alice],
      ] as const) {
        test(`${injection.name} (${mode} bind, ${who}): upstream_misconfigured at once, nothing open`, async () => {
          const { result, relay, atDeadline } = await throughRelay(
            { inject: injection.inject },
            mode,
            PATIENT_TIMEOUT_MS,
            username,
            password,
          );
          assert.deepEqual(result, { ok: false, failure: 'upstream_misconfigured', reason: INJECTED });
          assert.equal(atDeadline, false, 'refused before the deadline');
          assert.equal(relay.accepted, 1);
          // Nothing but the StartTLS request went in clear, and nothing at all after the refusal.
          assert.deepEqual(
            relay.firstRequests.map((frame) => frame.op),
            [OP.extendedRequest],
          );
          assert.ok(!relay.sent().includes(Buffer.from(password)), 'the password left in clear');
        });
      }
    }
  }

  test('the probe meets the same refusal (readiness without credentials)', async () => {
    const relay = await startLdapRelay(slapd.plainPort, { inject: (id) => forgedSuccessPrefix(id + 1) });
    try {
      for (const mode of ['direct', 'search'] as const) {
        const settings = settingsAt(relay.port, mode, PATIENT_TIMEOUT_MS);
        const probe = await probeLdap(settings, backendTls('localhost', slapd.caFile));
        assert.deepEqual(probe, { ok: false, reason: `upstream_misconfigured: ${INJECTED}` });
      }
      await relay.drained(SLACK_MS);
    } finally {
      await relay.close();
    }
  });
});

/** TLS never came up: everything the client sent is plaintext, and holds no bind and no password. */
function assertNoBindInClear(relay: LdapRelay, password: string): void {
  const ops = new FrameSplitter().push(relay.sent()).map((frame) => frame.op);
  assert.equal(ops[0], OP.extendedRequest);
  // The StartTLS request, and at most a polite UnbindRequest: no BindRequest, no search.
  assert.deepEqual(
    ops.filter((op) => op !== OP.extendedRequest && op !== OP.unbindRequest),
    [],
  );
  for (const secret of [password, SERVICE_PASSWORD]) {
    assert.ok(!relay.sent().includes(Buffer.from(secret)), 'a password left in clear');
  }
}

/** Answers an attacker gives to the StartTLS request in the server's place, and what they must end in. */
const FORGED_STARTTLS_ANSWERS: readonly {
  readonly name: string;
  readonly answer: (id: number) => Buffer;
  readonly failure: 'upstream_misconfigured' | 'upstream_unavailable';
  readonly reason: string | RegExp;
}[] = [
  ...[1, 2, 52, 53].map((code) => ({
    name: `result ${code}`,
    answer: (id: number) => extendedResponse(id, code),
    failure: 'upstream_misconfigured' as const,
    reason: `StartTLS refused: LDAP result ${code}`,
  })),
  {
    name: 'success for another message id',
    answer: (id) => extendedResponse(id + 1, 0, STARTTLS_OID),
    failure: 'upstream_misconfigured',
    reason: /^StartTLS answered for message id \d+$/,
  },
  {
    name: 'a BindResponse(success)',
    answer: (id) => bindResponse(id, 0),
    failure: 'upstream_misconfigured',
    reason: 'StartTLS answered with protocolOp 0x61',
  },
  {
    name: 'success naming another extended operation',
    answer: (id) => extendedResponse(id, 0, '1.3.6.1.4.1.4203.1.11.3'),
    failure: 'upstream_misconfigured',
    reason: 'StartTLS answered for another extended operation',
  },
  {
    name: 'a Notice of Disconnection',
    answer: () => noticeOfDisconnection(),
    failure: 'upstream_unavailable',
    reason: 'Notice of Disconnection (LDAP result 52)',
  },
  {
    name: 'a 2 GiB message announced',
    answer: () => Buffer.from([0x30, 0x84, 0x7f, 0xff, 0xff, 0xff]),
    failure: 'upstream_misconfigured',
    reason: /^StartTLS answer: a message of \d+ bytes \(limit 65536\)$/,
  },
  {
    name: 'garbage',
    answer: () => Buffer.from('HTTP/1.1 200 OK\r\n\r\n'),
    failure: 'upstream_misconfigured',
    reason: 'StartTLS answer: a message that is not a SEQUENCE',
  },
];

describe('a stripped or forged StartTLS answer never leads to a bind in clear', () => {
  for (const forged of FORGED_STARTTLS_ANSWERS) {
    test(`StartTLS answered by the attacker with ${forged.name}: ${forged.failure}, no bind sent`, async () => {
      for (const mode of ['direct', 'search'] as const) {
        const { result, relay, atDeadline } = await throughRelay(
          { strip: { kind: 'answer', answer: forged.answer } },
          mode,
          PATIENT_TIMEOUT_MS,
          'alice',
          directoryUser('alice').password,
        );
        assert.equal(failureOf(result), forged.failure, reasonOf(result));
        if (typeof forged.reason === 'string') assert.equal(reasonOf(result), forged.reason);
        else assert.match(reasonOf(result), forged.reason);
        assert.equal(atDeadline, false);
        assertNoBindInClear(relay, directoryUser('alice').password);
      }
    });
  }

  test('StartTLS swallowed: upstream_unavailable at the deadline, no bind sent', async () => {
    const { result, relay, atDeadline } = await throughRelay(
      { strip: { kind: 'drop' } },
      'search',
      STALL_TIMEOUT_MS,
      'alice',
      directoryUser('alice').password,
    );
    assert.deepEqual(result, {
      ok: false,
      failure: 'upstream_unavailable',
      reason: `no answer within ${STALL_TIMEOUT_MS} ms`,
    });
    assert.ok(atDeadline, 'gave up before the deadline');
    assertNoBindInClear(relay, directoryUser('alice').password);
  });
});

describe('a relay that only relays is harmless', () => {
  test('the right password logs in through it, a wrong one is refused as such', async () => {
    for (const mode of ['direct', 'search'] as const) {
      const ok = await throughRelay({}, mode, PATIENT_TIMEOUT_MS, 'uma', directoryUser('uma').password);
      assert.deepEqual(ok.result, { ok: true });
      const wrong = await throughRelay({}, mode, PATIENT_TIMEOUT_MS, 'uma', 'wrong');
      assert.equal(failureOf(wrong.result), 'bad_credentials', reasonOf(wrong.result));
    }
  });
});
