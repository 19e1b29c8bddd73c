// Contract §3, one person one identity: a look-alike of a name is that name or refused, never a
// second accepted name. The look-alikes are found at test time over the whole code point range: every
// code point whose compatibility form (NFKC, then lower case for UsernameCaseMapped) is one character
// that the profile allows on its own, e.g. ｌ, 𝐥, ⓛ or ℓ for l.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import fc from 'fast-check';
import type { UsernameCase } from '../../src/auth/username.ts';
import { canonicalUsername } from '../../src/auth/username.ts';

/** Each allowed character with the other code points that look like it, for one profile. */
function lookAlikes(usernameCase: UsernameCase): Map<string, string[]> {
  const fold = (c: string) => {
    const compat = c.normalize('NFKC');
    return usernameCase === 'lower' ? compat.toLowerCase() : compat;
  };
  const map = new Map<string, string[]>();
  for (let cp = 0; cp <= 0x10ffff; cp++) {
    if (cp >= 0xd800 && cp <= 0xdfff) continue;
    const c = String.fromCodePoint(cp);
    const target = fold(c);
    if (target === c || [...target].length !== 1) continue;
    const allowed = canonicalUsername(target, usernameCase);
    if (!allowed.ok || allowed.username !== target) continue;
    map.set(target, [...(map.get(target) ?? []), c]);
  }
  return map;
}

for (const usernameCase of ['lower', 'preserve'] as const) {
  describe(`look-alikes under USERNAME_CASE=${usernameCase}`, () => {
    const map = lookAlikes(usernameCase);
    const targets = [...map.keys()];

    test('the map holds the look-alikes the issue names', () => {
      assert.ok(targets.length > 500, `${targets.length} characters with look-alikes`);
      for (const fake of ['ｌ', '𝐥', 'ⓛ', 'ℓ', '𝓁'])
        assert.ok(map.get('l')?.includes(fake), `${fake} looks like l`);
      if (usernameCase === 'lower') assert.ok(map.get('l')?.includes('Ｌ'));
    });

    test('substituting look-alikes at random positions gives the name or a refusal', () => {
      const name = fc.array(fc.constantFrom(...targets, ...'abcdefghijklmnopqrstuvwxyz0123456789.-_'), {
        minLength: 1,
        maxLength: 10,
      });
      fc.assert(
        fc.property(name, fc.array(fc.nat()), (chars, picks) => {
          const original = canonicalUsername(chars.join(''), usernameCase);
          if (!original.ok) return;
          const fake = chars.map((c, i) => {
            const options = map.get(c);
            const pick = picks[i];
            return options === undefined || pick === undefined ? c : options[pick % options.length]!;
          });
          const result = canonicalUsername(fake.join(''), usernameCase);
          if (result.ok)
            assert.equal(
              result.username,
              original.username,
              `${JSON.stringify(fake.join(''))} is another name`,
            );
        }),
        { numRuns: 5000 },
      );
    });

    test('each single look-alike alone is its character or refused', () => {
      for (const [target, fakes] of map) {
        for (const fake of fakes) {
          const result = canonicalUsername(fake, usernameCase);
          if (result.ok) assert.equal(result.username, target, `U+${fake.codePointAt(0)!.toString(16)}`);
        }
      }
    });
  });
}
