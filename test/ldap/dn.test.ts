// Contract §8: search-then-bind binds only as an entry under LDAP_BASE_DN, compared RDN by RDN (not as
// text): escaped separators, multi-valued RDNs, case, spacing, hex pairs and `#` BER values, and
// properties over any username escaped into a DN and over values compared after preparation.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import fc from 'fast-check';
import { dnKey, isUnderBase, parseDn } from '../../src/backends/ldap/dn.ts';
import { escapeDnValue } from '../../src/backends/ldap/escape.ts';

const BASE = 'ou=people,dc=example,dc=org';

function under(dn: string, base = BASE): boolean {
  const parsedDn = parseDn(dn);
  const parsedBase = parseDn(base);
  assert.ok(parsedDn !== null, `does not parse: ${dn}`);
  assert.ok(parsedBase !== null, `does not parse: ${base}`);
  return isUnderBase(parsedDn, parsedBase);
}

describe('a DN is under the base RDN by RDN', () => {
  test('entries below the base, and the base itself, are under it', () => {
    for (const dn of [
      `uid=alice,${BASE}`,
      `uid=twin,ou=alumni,${BASE}`,
      BASE,
      'UID=alice,OU=People,DC=Example,DC=ORG',
      'uid=alice, ou=people , dc=example,dc=org',
      'uid=alice,ou=people,0.9.2342.19200300.100.1.25=example,dc=org',
      'uid=alice,OID.2.5.4.11=people,dc=example,dc=org',
      'uid=alice,ou=\\70eople,dc=example,dc=org',
      'uid=alice,ou=ｐｅｏｐｌｅ,dc=example,dc=org',
      `uid=d'arcy\\+o\\,k,${BASE}`,
      `cn=a+sn=b,${BASE}`,
    ]) {
      assert.equal(under(dn), true, dn);
    }
  });

  test('entries elsewhere are not, however their text ends', () => {
    for (const dn of [
      'uid=alice,ou=services,dc=example,dc=org',
      'cn=clubhouse,ou=services,dc=example,dc=org',
      // The text ends with `,ou=people,dc=example,dc=org`, but the escaped comma makes one RDN of it.
      'cn=x\\,ou=people,dc=example,dc=org',
      'uid=alice\\,ou=people,dc=example,dc=org',
      'uid=alice,ou=people,dc=example,dc=org,dc=evil',
      'uid=alice,ou=people+cn=x,dc=example,dc=org',
      'uid=alice,ou=people2,dc=example,dc=org',
      'dc=example,dc=org',
      // A `#` value is compared as BER bytes, never decoded to the text it may spell: refused, not guessed.
      'uid=alice,ou=#0406706571706c65,dc=example,dc=org',
    ]) {
      assert.equal(under(dn), false, dn);
    }
  });

  test('the root DSE base holds every entry', () => {
    assert.equal(under(`uid=alice,${BASE}`, ''), true);
  });

  test('strings that are not DNs do not parse', () => {
    for (const dn of ['uid', 'uid=a,', '=a', 'uid=a;x', 'uid=\\zz', 'u id=a', 'uid=#zz', 'uid=\\ff']) {
      assert.equal(parseDn(dn), null, dn);
    }
  });
});

describe('any username escaped into the DN template', () => {
  test('stays one RDN, directly under the base', () => {
    const base = parseDn(BASE) ?? [];
    fc.assert(
      fc.property(fc.string({ unit: 'binary', minLength: 1, maxLength: 40 }), (username) => {
        const dn = parseDn(`uid=${escapeDnValue(username)},${BASE}`);
        assert.ok(dn !== null, username);
        assert.equal(dn.length, base.length + 1);
        assert.equal(dn[0]?.length, 1);
        assert.equal(isUnderBase(dn, base), true);
      }),
    );
  });
});

describe('values compared as prepared (RFC 4518 in brief)', () => {
  // Printable ASCII (the fast path) with spaces, tabs and a few characters NFKC or case folds.
  const alphabet = fc.constantFrom(...'aZ09 .-_\t', 'Ä', 'ä', 'ﬁ', 'Ｂ', '\u00a0', 'ß');
  const prepared = (value: string) => value.normalize('NFKC').toLowerCase().replace(/\s+/g, ' ').trim();
  const key = (value: string) => {
    const dn = parseDn(`cn=${escapeDnValue(value)},${BASE}`);
    assert.ok(dn !== null, value);
    return dnKey(dn);
  };

  test('a value names what its prepared form names, on every path through the preparation', () => {
    fc.assert(
      fc.property(fc.string({ unit: alphabet, minLength: 1, maxLength: 12 }), (value) => {
        fc.pre(prepared(value) !== '');
        assert.equal(key(value), key(prepared(value)));
      }),
      { numRuns: 1000 },
    );
    assert.equal(key('Group  7'), key('group 7'));
    assert.notEqual(key('Group 7'), key('Group 70'));
  });
});
