// Usernames (contract §3, "One person, one identity"; §4): the one home of the username's rules, its
// canonical form and its length, counted in code points like every limit (codePointLength). A login,
// an identity provider's claim, the import, the CLI, the group sync and the migration of stored
// names all ask storableUsername.
//
// The PRECIS profiles of RFC 8265: UsernameCaseMapped (USERNAME_CASE=lower, the default) and
// UsernameCasePreserved (USERNAME_CASE=preserve), over the IdentifierClass of RFC 8264 (see
// precis-identifier.ts). Written here because no maintained PRECIS library exists for Node:
// precis-js implements the obsolete RFC 7564 and is unmaintained. Without it, `ＬＥＮＡ`, `𝐥𝐞𝐧𝐚` or
// `ⓛⓔⓝⓐ` would bind as lena at a directory that folds case and compatibility forms (OpenLDAP,
// Active Directory) and become second users beside her.
import { USERNAME_MAX_LENGTH } from '../store/limits.ts';
import { bidiRuleRefusal } from './bidi-rule.ts';
import { identifierClassRefusal } from './precis-identifier.ts';

/** USERNAME_CASE: `lower` is UsernameCaseMapped, `preserve` UsernameCasePreserved. */
export type UsernameCase = 'lower' | 'preserve';

/** A canonical username, or why the profile refuses the input. Never thrown. */
export type CanonicalUsername =
  | { readonly ok: true; readonly username: string }
  | { readonly ok: false; readonly reason: string };

/** The RFC 8265 profile a USERNAME_CASE setting names. */
export function usernameProfile(usernameCase: UsernameCase): 'UsernameCaseMapped' | 'UsernameCasePreserved' {
  return usernameCase === 'lower' ? 'UsernameCaseMapped' : 'UsernameCasePreserved';
}

/**
 * RFC 8265 §3.3.1 and §3.4.1, Width Mapping Rule: a fullwidth or halfwidth code point becomes its
 * <wide> or <narrow> decomposition. Those are exactly the compatibility decompositions of U+3000
 * and of the Halfwidth and Fullwidth Forms block (U+FF00–U+FFEF) in UnicodeData.txt; each is one
 * code point, which NFKC of that single code point yields (or, where the target itself decomposes,
 * something the IdentifierClass refuses just the same, e.g. U+FFE3 → U+00AF → " ̄").
 */
function mapWidth(value: string): string {
  let out = '';
  for (const c of value) {
    const cp = c.codePointAt(0)!;
    out += cp === 0x3000 || (cp >= 0xff00 && cp <= 0xffef) ? c.normalize('NFKC') : c;
  }
  return out;
}

/**
 * RFC 8265 §3.3.1 Case Mapping Rule: Unicode toLowerCase, one code point at a time. Per code
 * point, because String.prototype.toLowerCase applies the Final_Sigma context (`ΣΑΣ` → `σας`),
 * so that `σας` and `σασ` would be told apart by position; the unconditional mapping makes both
 * `σασ`, as the Go PRECIS implementation does (x/text/secure/precis, HandleFinalSigma(false)).
 */
function mapCase(value: string): string {
  let out = '';
  for (const c of value) out += c.toLowerCase();
  return out;
}

/** One application of the profile's rules in the order of RFC 8264 §7; the string or why not. */
function applyRules(input: string, usernameCase: UsernameCase): CanonicalUsername {
  if (!input.isWellFormed()) return { ok: false, reason: 'it is not well-formed Unicode (a lone surrogate)' };
  let value = mapWidth(input); // 1. width mapping (2. no additional mapping)
  if (usernameCase === 'lower') value = mapCase(value); // 3. case mapping
  value = value.normalize('NFC'); // 4. normalisation
  const cps = Array.from(value, (c) => c.codePointAt(0)!);
  if (cps.length === 0) return { ok: false, reason: 'it is empty' }; // RFC 8265 §3.3.3: not empty
  const bidi = bidiRuleRefusal(cps); // 5. directionality
  if (bidi !== null) return { ok: false, reason: bidi };
  const refusal = identifierClassRefusal(cps); // 6. the IdentifierClass's behavioural rules
  return refusal === null ? { ok: true, username: value } : { ok: false, reason: refusal };
}

/**
 * Printable ASCII without the space: each such code point is PVALID in the IdentifierClass (RFC
 * 8264 §9.11, ASCII7) and not right-to-left, width mapping and NFC leave it as it is, and lower
 * case keeps it printable ASCII. The profile's answer for such a string is the string, lower-cased
 * under UsernameCaseMapped (test/login/username.test.ts checks these premises against the tables).
 */
const PRINTABLE_ASCII = /^[\x21-\x7e]+$/;

/**
 * The canonical form of a (trimmed) username under the profile USERNAME_CASE names, or why it is
 * refused. RFC 8264 §7: the rules are applied again until the output is stable; a string not
 * stable after three more passes is refused.
 */
export function canonicalUsername(input: string, usernameCase: UsernameCase): CanonicalUsername {
  // Nearly every username (a login, a directory's uid): the answer without the tables.
  if (PRINTABLE_ASCII.test(input))
    return { ok: true, username: usernameCase === 'lower' ? input.toLowerCase() : input };
  let result = applyRules(input, usernameCase);
  for (let pass = 0; pass < 3 && result.ok; pass++) {
    const again = applyRules(result.username, usernameCase);
    if (!again.ok || again.username === result.username) return again;
    result = again;
  }
  if (!result.ok) return result;
  return { ok: false, reason: 'it is not stable under the profile (RFC 8264 §7)' };
}

/**
 * A text's length in code points: how contract §3 and §4 count every limit (a username's, a
 * password's, a group field's), as PostgreSQL's char_length and the schemas' maxLength do. UTF-16
 * units would count `𝐥` twice.
 */
export function codePointLength(text: string): number {
  let length = 0;
  for (const _ of text) length++;
  return length;
}

/** A username as it can be stored (contract §3, §4), or why not: the profile refuses it, or too long. */
export type StorableUsername =
  | { readonly ok: true; readonly username: string }
  | { readonly ok: false; readonly refused: 'profile'; readonly reason: string }
  | { readonly ok: false; readonly refused: 'length'; readonly username: string };

/**
 * The canonical form of a (trimmed) username if it fits the store: at most USERNAME_MAX_LENGTH code
 * points once canonical, since case mapping can lengthen a string ('İ' → 'i̇'). Every way a username
 * enters (a login, an identity provider's claim, the import, the CLI, the sync, the migration of
 * stored names) asks this, and words the refusal its own way.
 */
export function storableUsername(input: string, usernameCase: UsernameCase): StorableUsername {
  const canonical = canonicalUsername(input, usernameCase);
  if (!canonical.ok) return { ok: false, refused: 'profile', reason: canonical.reason };
  if (codePointLength(canonical.username) > USERNAME_MAX_LENGTH)
    return { ok: false, refused: 'length', username: canonical.username };
  return canonical;
}

/** The sentence a refusal becomes in an error message: "… allowed by the … profile (RFC 8265): …". */
export function refusalText(reason: string, usernameCase: UsernameCase): string {
  return `must be allowed by the ${usernameProfile(usernameCase)} profile (RFC 8265): ${reason}`;
}
