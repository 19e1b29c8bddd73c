// The group sync reads search entries and the paged results cookie itself (search-ber.ts) instead of
// through ldapts: the same values as ldapts reads from the same bytes (its parser as the oracle),
// binary values kept as bytes, and malformed answers refused with a reason, never thrown.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { type SearchEntry as LdaptsEntry, MessageParser } from 'ldapts';
import { readEnvelope } from '../../src/backends/ldap/ber.ts';
import { readPagedCookie, readSearchEntry } from '../../src/backends/ldap/groups/search-ber.ts';
import { ldapMessage, OP, searchResultDone, tlv } from '../helpers/ldap-ber.ts';

const octets = (value: string | Buffer) => tlv(0x04, typeof value === 'string' ? Buffer.from(value) : value);

/** A SearchResultEntry with these attributes, in this order. */
const entry = (id: number, dn: string, attributes: readonly [string, readonly (string | Buffer)[]][]) =>
  ldapMessage(
    id,
    tlv(
      OP.searchResultEntry,
      octets(dn),
      tlv(
        0x30,
        ...attributes.map(([type, values]) => tlv(0x30, octets(type), tlv(0x31, ...values.map(octets)))),
      ),
    ),
  );

const opOf = (frame: Buffer) => {
  const envelope = readEnvelope(frame);
  assert.ok(envelope.ok);
  return envelope.value.op;
};

/** What ldapts makes of the same bytes: its parser, then its plain object. */
function ldaptsReads(frame: Buffer, attributes: string[], binary: string[]) {
  const parser = new MessageParser();
  let read: Record<string, unknown> = {};
  parser.on('message', (message) => {
    read = (message as LdaptsEntry).toObject(attributes, binary);
  });
  parser.read(frame, new Map());
  return read;
}

describe('search answers read by the group sync', () => {
  test('an entry reads as ldapts reads it: UTF-8 text, several values, an empty set, bytes where asked', () => {
    const guid = Buffer.from('00112233445566778899aabbccddeeff', 'hex');
    const frame = entry(3, 'cn=Biologie 2B – Zellen,ou=groups,dc=example,dc=org', [
      ['cn', ['Biologie 2B – Zellen']],
      ['member', ['uid=alice,ou=people,dc=example,dc=org', 'uid=jürgen,ou=people,dc=example,dc=org']],
      ['objectGUID', [guid]],
      ['description', []],
      ['memberUid', ['ＢＯＢ']],
    ]);
    const read = readSearchEntry(frame, opOf(frame), new Set(['objectguid']));
    assert.ok(read.ok);
    const oracle = ldaptsReads(
      frame,
      ['cn', 'member', 'objectGUID', 'description', 'memberUid'],
      ['objectGUID'],
    );
    assert.equal(read.value.dn, oracle['dn']);
    for (const { type, values } of read.value.attributes) {
      const key = Object.keys(oracle).find((name) => name.toLowerCase() === type);
      assert.ok(key !== undefined, type);
      const expected = oracle[key];
      assert.deepEqual(values, Array.isArray(expected) ? expected : [expected], type);
    }
    assert.deepEqual(
      read.value.attributes.map((a) => a.type),
      ['cn', 'member', 'objectguid', 'description', 'memberuid'],
    );
    assert.ok(Buffer.isBuffer(read.value.attributes[2]?.values[0]));
  });

  test('a malformed entry is refused with a reason', () => {
    const noList = ldapMessage(3, tlv(OP.searchResultEntry, octets('cn=x')));
    const badValue = ldapMessage(
      3,
      tlv(
        OP.searchResultEntry,
        octets('cn=x'),
        tlv(0x30, tlv(0x30, octets('cn'), tlv(0x31, tlv(0x02, Buffer.from([1]))))),
      ),
    );
    const noSet = ldapMessage(
      3,
      tlv(OP.searchResultEntry, octets('cn=x'), tlv(0x30, tlv(0x30, octets('cn')))),
    );
    for (const [frame, reason] of [
      [noList, 'an entry without its attribute list'],
      [badValue, 'a value of cn that is not an OCTET STRING'],
      [noSet, 'an attribute that is not a type and a set of values'],
    ] as const) {
      assert.deepEqual(readSearchEntry(frame, opOf(frame), new Set()), { ok: false, reason });
    }
  });

  test("the paged results cookie is read from the done's controls; none is an empty cookie", () => {
    const paged = (cookie: Buffer, critical: boolean) =>
      tlv(
        0x30,
        octets('1.2.840.113556.1.4.319'),
        ...(critical ? [tlv(0x01, Buffer.from([0xff]))] : []),
        octets(tlv(0x30, tlv(0x02, Buffer.from([0])), octets(cookie))),
      );
    const other = tlv(0x30, octets('1.3.6.1.4.1.42.2.27.8.5.1'));
    const done = (...controls: Buffer[]) => {
      const bare = searchResultDone(5, 0);
      // The envelope with controls [0] after the protocolOp.
      const inner = bare.subarray(2);
      return tlv(0x30, inner, tlv(0xa0, ...controls));
    };
    const cookie = Buffer.from('next page');
    for (const frame of [done(paged(cookie, false)), done(other, paged(cookie, true))]) {
      assert.deepEqual(readPagedCookie(frame, opOf(frame)), { ok: true, value: cookie });
    }
    const last = done(paged(Buffer.alloc(0), false));
    assert.deepEqual(readPagedCookie(last, opOf(last)), { ok: true, value: Buffer.alloc(0) });
    const plain = searchResultDone(5, 0);
    assert.deepEqual(readPagedCookie(plain, opOf(plain)), { ok: true, value: Buffer.alloc(0) });
    const broken = done(
      tlv(0x30, octets('1.2.840.113556.1.4.319'), octets(tlv(0x30, tlv(0x02, Buffer.from([0]))))),
    );
    assert.deepEqual(readPagedCookie(broken, opOf(broken)), {
      ok: false,
      reason: 'a paged results control that is not a size and a cookie',
    });
  });
});
