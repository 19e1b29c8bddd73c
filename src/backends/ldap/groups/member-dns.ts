// Member DNs (member, uniqueMember, owner) read back to usernames for the group sync (contract §11):
// every entry of the user base (LDAP_BASE_DN) with the username attribute is read by one paged
// search (reader.ts: one round trip per page, where one search per member DN would be
// 100 000 round trips for 100 000 memberships) and indexed here by its DN, then each member DN is
// looked up. A DN the directory spells exactly as the entry's own is found by its text; any other
// is compared as a name (dn.ts), parsed once however many groups name it. A DN outside the user
// base, or not found there, is skipped and reported.
import { dnKey, isUnderBase, parseDn } from '../dn.ts';
import { outOfProtocol } from '../errors.ts';
import type { SearchEntry } from './search-ber.ts';

/** The parsed form of `dn`, which must be under `base`: else the directory answered out of what was asked. */
export function underBase(dn: string, base: ReturnType<typeof parseDn>, what: string) {
  const parsed = parseDn(dn);
  if (parsed === null) throw outOfProtocol(`an entry's DN does not parse: ${dn}`);
  if (base === null || !isUnderBase(parsed, base)) throw outOfProtocol(`an entry outside ${what}: ${dn}`);
  return parsed;
}

/** Users by DN, filled from the user search, and the member DNs looked up in it. */
export interface MemberDns {
  /** Records one entry of the user search (which must be under the user base). */
  add(entry: SearchEntry): void;
  /** The username of the entry `dn` names (its attribute's first value), or why it has none. */
  resolve(dn: string): string | { readonly skip: string };
  /**
   * Every user entry's values of the username attribute, one list per entry: which names an
   * entry answers to, so that the sync can tell a name that several entries answer to (contract
   * §8: a login refuses it; the sync must too).
   */
  names(): readonly (readonly string[])[];
}

type Rdns = NonNullable<ReturnType<typeof parseDn>>;

export function memberDns(userBase: Rdns, usernameType: string, usernameAttribute: string): MemberDns {
  /** Usernames by the entry's DN as the directory spelled it; by its name (dnKey) once needed. */
  const byText = new Map<string, string>();
  let byKey: Map<string, string> | undefined;
  /** Member DNs not found by their text, each looked up once. */
  const others = new Map<string, string | { readonly skip: string }>();
  const missing = { skip: `no entry with ${usernameAttribute} under the user base` };
  const names: string[][] = [];
  const text = (value: string | Buffer) => (typeof value === 'string' ? value : value.toString('utf8'));
  return {
    add(entry) {
      underBase(entry.dn, userBase, 'LDAP_BASE_DN');
      const values = entry.attributes.find((attribute) => attribute.type === usernameType)?.values ?? [];
      const usernames = values.map(text).filter((username) => username !== '');
      if (usernames.length === 0) return;
      names.push(usernames);
      // A multi-valued attribute: the first value is the entry's username, as before.
      if (values[0] !== undefined && text(values[0]) !== '') byText.set(entry.dn, text(values[0]));
    },
    names: () => names,
    resolve(dn) {
      const known = byText.get(dn) ?? others.get(dn);
      if (known !== undefined) return known;
      const parsed = parseDn(dn);
      let found: string | { readonly skip: string };
      if (parsed === null) found = { skip: 'not a DN' };
      else if (!isUnderBase(parsed, userBase)) found = { skip: 'outside the user base (LDAP_BASE_DN)' };
      else {
        // The user entries' DNs parsed again (they did once, under the base): cheaper than keeping them.
        byKey ??= new Map(
          Array.from(byText, ([user, username]) => [dnKey(underBase(user, userBase, '')), username]),
        );
        found = byKey.get(dnKey(parsed)) ?? missing;
      }
      others.set(dn, found);
      return found;
    },
  };
}
