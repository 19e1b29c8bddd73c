// Escaping a username into a DN and a search filter (contract §8), so that no username widens a
// bind or a search: `admin,ou=x` stays one attribute value, `*)(uid=*` stays a literal string.
// Filters use ldapts's own RFC 4515 escaper; DNs are hand-written because ldapts's RDN escaping
// quotes values with surrounding spaces (RFC 2253 style), which RFC 4514 no longer allows.
import { Filter } from 'ldapts';

/** RFC 4514 §2.4: an attribute value as it may stand in a DN string. */
export function escapeDnValue(value: string): string {
  let out = '';
  for (let i = 0; i < value.length; i++) {
    const c = value.charAt(i);
    const atEdge = (i === 0 && (c === ' ' || c === '#')) || (i === value.length - 1 && c === ' ');
    if (c === '\0') out += '\\00';
    // `=` is not required by §2.4 but is allowed, and some servers' parsers need it escaped.
    else if (atEdge || '"+,;<>\\='.includes(c)) out += `\\${c}`;
    else out += c;
  }
  return out;
}

/** RFC 4515 §3: an assertion value as it may stand in a filter string. */
export function escapeFilterValue(value: string): string {
  return Filter.escape(value);
}

/** Puts the escaped username into every `{username}` of a template. */
export function fillTemplate(
  template: string,
  username: string,
  escapeValue: (value: string) => string,
): string {
  // A replacer function: a string replacement would expand `$&` or `$'` inside the username.
  return template.replaceAll('{username}', () => escapeValue(username));
}
