// Distinguished names compared as names, not as strings (contract §8): search-then-bind binds only as
// an entry under LDAP_BASE_DN, so a directory (or whoever answers for it) cannot steer the bind to
// an entry outside what was asked (contract §8). `cn=x\,ou=people,dc=example,dc=org` ends with the
// text `,ou=people,dc=example,dc=org` but is not under it; `OU=People, DC=Example` is. Parsed per
// RFC 4514 §3 (escapes, hex pairs, `#` BER values, multi-valued RDNs); attribute types compared
// without case (and a few well-known OIDs as their names), values after an RFC 4518-like
// preparation: NFKC, lower case, insignificant spaces removed. ldapts builds DNs but parses none.

/** One attribute of an RDN, prepared for comparison. */
interface Ava {
  readonly type: string;
  readonly value: string;
}

/** An RDN: its AVAs sorted, so `a=1+b=2` equals `b=2+a=1` (RFC 4512 §2.3.1: a set). */
type Rdn = readonly Ava[];

/** The names of RFC 4519 attributes that appear in DNs, by OID. */
const NAMES_BY_OID: ReadonlyMap<string, string> = new Map([
  ['2.5.4.3', 'cn'],
  ['2.5.4.6', 'c'],
  ['2.5.4.7', 'l'],
  ['2.5.4.8', 'st'],
  ['2.5.4.10', 'o'],
  ['2.5.4.11', 'ou'],
  ['0.9.2342.19200300.100.1.1', 'uid'],
  ['0.9.2342.19200300.100.1.25', 'dc'],
]);

/** A type already as prepareType would make it (nearly all: `uid`, `ou`, `dc`). */
const PREPARED_TYPE = /^[a-z][a-z0-9-]*$/;

/** RFC 4514 §3: descr or numericoid (an `OID.` prefix, seen in older DNs, is dropped). */
function prepareType(raw: string): string | null {
  if (PREPARED_TYPE.test(raw)) return raw;
  const type = raw
    .trim()
    .toLowerCase()
    .replace(/^oid\./, '');
  if (/^[a-z][a-z0-9-]*$/.test(type)) return type;
  if (/^[0-9]+(\.[0-9]+)+$/.test(type)) return NAMES_BY_OID.get(type) ?? type;
  return null;
}

/**
 * True when `value` is printable ASCII with no leading, trailing or doubled space: NFKC leaves it
 * as it is and no space is insignificant, so preparing it is lower-casing it (nearly every value).
 */
function isPlainAscii(value: string): boolean {
  let previous = 32;
  for (let i = 0; i < value.length; i++) {
    const code = value.charCodeAt(i);
    if (code < 32 || code > 126 || (code === 32 && previous === 32)) return false;
    previous = code;
  }
  return previous !== 32;
}

/** RFC 4518 §2 in brief: compatibility forms folded, case ignored, insignificant spaces dropped. */
function prepareValue(value: string): string {
  if (isPlainAscii(value)) return value.toLowerCase();
  return value.normalize('NFKC').toLowerCase().replace(/\s+/g, ' ').trim();
}

const HEX_PAIR = /^[0-9a-fA-F]{2}$/;
const SPECIALS = ' "#+,;<=>\\';

/** RFC 4514 §3: a value's escapes (`\,` or a hex pair of a UTF-8 byte) undone; null when malformed. */
function unescapeValue(raw: string): string | null {
  const bytes: number[] = [];
  for (let i = 0; i < raw.length; i++) {
    const c = raw[i] ?? '';
    if (c !== '\\') {
      bytes.push(...Buffer.from(c, 'utf8'));
      continue;
    }
    const pair = raw.slice(i + 1, i + 3);
    if (HEX_PAIR.test(pair)) {
      bytes.push(Number.parseInt(pair, 16));
      i += 2;
    } else if (i + 1 < raw.length && SPECIALS.includes(raw[i + 1] ?? '')) {
      bytes.push(...Buffer.from(raw[i + 1] ?? '', 'utf8'));
      i += 1;
    } else {
      return null;
    }
  }
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(Uint8Array.from(bytes));
  } catch {
    return null;
  }
}

const isHexDigit = (code: number) =>
  (code >= 48 && code <= 57) || (code >= 65 && code <= 70) || (code >= 97 && code <= 102);

/**
 * Reads one attribute value starting at `at` (RFC 4514 §3: a string with escapes, or `#` and hex
 * pairs), up to an unescaped `,`, `+` or the end. Returns the prepared value and where it stopped.
 * A value without a backslash (nearly all) is taken as it stands; only escapes are decoded bytewise.
 */
function readValue(dn: string, at: number): { value: string; next: number } | null {
  let i = at;
  while (dn.charCodeAt(i) === 32) i++;
  if (dn[i] === '#') {
    // The BER encoding itself: compared byte for byte, never as text.
    const match = /^#((?:[0-9a-fA-F]{2})+)\s*/.exec(dn.slice(i));
    if (match === null) return null;
    return { value: `#${(match[1] ?? '').toLowerCase()}`, next: i + match[0].length };
  }
  const start = i;
  let escaped = false;
  for (; i < dn.length; i++) {
    const code = dn.charCodeAt(i);
    if (code === 44 || code === 43) break; // `,` `+`
    if (code === 92) {
      // `\` and a hex pair, or `\` and one special character; anything else is no DN.
      escaped = true;
      if (isHexDigit(dn.charCodeAt(i + 1)) && isHexDigit(dn.charCodeAt(i + 2))) i += 2;
      else if (i + 1 < dn.length && SPECIALS.includes(dn[i + 1] ?? '')) i += 1;
      else return null;
    } else if (code === 34 || code === 60 || code === 62 || code === 59) {
      // RFC 4514 §3 (SUTF1): `"` `<` `>` `;` must be escaped inside a value; unescaped, the DN is not one.
      return null;
    }
  }
  const raw = dn.slice(start, i);
  const value = escaped ? unescapeValue(raw) : raw;
  return value === null || !value.isWellFormed() ? null : { value: prepareValue(value), next: i };
}

/** The RDNs of `dn`, leftmost first, ready to compare; null when it is not an RFC 4514 DN. */
export function parseDn(dn: string): Rdn[] | null {
  if (dn.trim() === '') return [];
  const rdns: Rdn[] = [];
  let avas: Ava[] = [];
  let at = 0;
  for (;;) {
    const equals = dn.indexOf('=', at);
    if (equals < 0) return null;
    const type = prepareType(dn.slice(at, equals));
    const read = type === null ? null : readValue(dn, equals + 1);
    if (type === null || read === null) return null;
    avas.push({ type, value: read.value });
    if (read.next >= dn.length || dn[read.next] === ',') {
      const key = (ava: Ava) => `${ava.type}\0${ava.value}`;
      rdns.push(avas.length === 1 ? avas : avas.sort((a, b) => (key(a) < key(b) ? -1 : 1)));
      avas = [];
      if (read.next >= dn.length) return rdns;
    }
    at = read.next + 1;
  }
}

function sameRdn(a: Rdn, b: Rdn): boolean {
  return a.length === b.length && a.every((ava, i) => ava.type === b[i]?.type && ava.value === b[i]?.value);
}

/** True when `dn` is `base` or below it: its last RDNs are base's, one by one. */
export function isUnderBase(dn: readonly Rdn[], base: readonly Rdn[]): boolean {
  if (dn.length < base.length) return false;
  const offset = dn.length - base.length;
  return base.every((rdn, i) => sameRdn(dn[offset + i] ?? [], rdn));
}

/** One text per name: two DNs that parseDn finds equal have the same key (a Map key for lookups). */
export function dnKey(dn: readonly Rdn[]): string {
  return dn.map((rdn) => rdn.map((ava) => `${ava.type}\u0001${ava.value}`).join('\u0002')).join('\u0000');
}
