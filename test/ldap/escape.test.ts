// Contract §8: the username is escaped as an RFC 4514 DN value and an RFC 4515 filter value, so no
// username can add an RDN, end a filter early or turn into a wildcard; properties over random input.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import fc from 'fast-check';
import { escapeDnValue, escapeFilterValue, fillTemplate } from '../../src/backends/ldap/escape.ts';

/** Reverses RFC 4514 escaping (`\X` and `\HH`), failing on a bare special character. */
function unescapeDnValue(escaped: string): string {
  let out = '';
  for (let i = 0; i < escaped.length; i++) {
    const c = escaped.charAt(i);
    if (c === '\\') {
      const hex = /^[0-9a-fA-F]{2}/.exec(escaped.slice(i + 1));
      if (hex !== null) {
        out += String.fromCharCode(Number.parseInt(hex[0], 16));
        i += 2;
      } else {
        out += escaped.charAt(i + 1);
        i += 1;
      }
    } else {
      assert.ok(!'"+,;<>\\='.includes(c), `bare ${c} in ${escaped}`);
      out += c;
    }
  }
  return out;
}

describe('RFC 4514 DN values', () => {
  test('the examples of RFC 4514 §4 and the specials at the edges', () => {
    assert.equal(escapeDnValue('Sue, Grabbit and Runn'), 'Sue\\, Grabbit and Runn');
    assert.equal(escapeDnValue('Before\rAfter'), 'Before\rAfter');
    assert.equal(escapeDnValue('#lead'), '\\#lead');
    assert.equal(escapeDnValue('mid#dle'), 'mid#dle');
    assert.equal(escapeDnValue(' both '), '\\ both\\ ');
    assert.equal(escapeDnValue('a+b=c;d<e>f"g\\h'), 'a\\+b\\=c\\;d\\<e\\>f\\"g\\\\h');
    assert.equal(escapeDnValue('nul\0'), 'nul\\00');
    assert.equal(escapeDnValue('admin,ou=x'), 'admin\\,ou\\=x');
    assert.equal(escapeDnValue('jürgen'), 'jürgen');
  });

  test('any string escapes to a single value that reads back as itself', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary' }), (value) => {
        const escaped = escapeDnValue(value);
        assert.equal(unescapeDnValue(escaped), value);
        assert.ok(!/^[ #]/.test(escaped), escaped);
        assert.ok(!escaped.endsWith(' ') || escaped.endsWith('\\ '), escaped);
      }),
    );
  });
});

describe('RFC 4515 filter values', () => {
  test('specials become hex escapes', () => {
    assert.equal(escapeFilterValue('*)(uid=*))(|(uid=*'), '\\2a\\29\\28uid=\\2a\\29\\29\\28|\\28uid=\\2a');
    assert.equal(escapeFilterValue('back\\slash\0'), 'back\\5cslash\\00');
  });

  test('no string leaves a bare *, (, ) or NUL, nor a backslash that is not an escape', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary' }), (value) => {
        const escaped = escapeFilterValue(value);
        assert.ok(!/[*()\0]/.test(escaped), escaped);
        assert.ok(!/\\(?![0-9a-f]{2})/.test(escaped), escaped);
      }),
    );
  });
});

describe('templates', () => {
  test('every {username} is filled, escaped', () => {
    assert.equal(
      fillTemplate('(|(uid={username})(mail={username}))', 'a*', escapeFilterValue),
      '(|(uid=a\\2a)(mail=a\\2a))',
    );
  });

  test("replacement patterns in the username stay literal ($&, $`, $')", () => {
    assert.equal(fillTemplate('uid={username},dc=x', '$&', escapeDnValue), 'uid=$&,dc=x');
    assert.equal(fillTemplate('uid={username},dc=x', "$'", escapeDnValue), "uid=$',dc=x");
    assert.equal(fillTemplate('(uid={username})', '$`', escapeFilterValue), '(uid=$`)');
  });
});
