// The settings of one LDAP directory as the backend takes them (contract §8); config/ parses and
// checks them (config/backends/ldap.ts), and nothing in backends/ldap/ reads a setting.

/** How the connection is secured: ldaps://, required StartTLS on ldap://, or plain text (loopback). */
export type LdapSecurity = 'tls' | 'starttls' | 'plain';

export interface LdapSettings {
  /** `ldaps://host[:636]` or `ldap://host[:389]`. */
  readonly url: string;
  readonly security: LdapSecurity;
  /** `plain` to a host that is not loopback was asked for by name. */
  readonly allowPlaintext: boolean;
  readonly caFile: string | null;
  /** Direct bind: a DN template with `{username}`; null for search-then-bind. */
  readonly userDn: string | null;
  readonly bindDn: string | null;
  readonly bindPassword: string | null;
  readonly baseDn: string | null;
  readonly userFilter: string;
  readonly timeoutMs: number;
  readonly maxConcurrency: number;
  readonly queueLimit: number;
}

/** One LDAP backend to build: its name, the mail domains it serves (null: all) and its directory. */
export interface LdapBackendSpec {
  readonly kind: 'ldap';
  readonly name: string;
  readonly domains: readonly string[] | null;
  readonly ldap: LdapSettings;
}
