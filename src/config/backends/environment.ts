// The backends and the group sync of the environment's settings (contract §5, §8, §11): AUTH_BACKENDS
// over the IMAP_* and LDAP_* settings, LDAP_GROUP_* over the same directory. Their rules are
// imap.ts's, ldap.ts's and group-sync.ts's, shared with the AUTH_CONFIG file (auth-config.ts).
import type { LdapSettings } from '../../backends/ldap/settings.ts';
import type { CleanedSettings } from '../environment.ts';
import { ConfigError, type Refuse } from '../error.ts';
import type { ConfiguredBackend } from './chain.ts';
import { groupSyncSettings } from './group-sync.ts';
import { type ConfiguredImap, imapSettings } from './imap.ts';
import { ldapSettings } from './ldap.ts';

/** `bindPassword` → LDAP_BIND_PASSWORD: an error names the variable the operator set. */
function envRefuse(prefix: 'IMAP' | 'LDAP'): Refuse {
  return (field, message) => {
    throw new ConfigError(`${prefix}_${field.replace(/[A-Z]/g, (c) => `_${c}`).toUpperCase()}`, message);
  };
}

/** The IMAP server of the IMAP_* settings (contract §5); its rules are imap.ts's. */
export function imapFromEnvironment(s: CleanedSettings): ConfiguredImap {
  return imapSettings(
    {
      host: s.IMAP_HOST,
      port: s.IMAP_PORT,
      security: s.IMAP_SECURITY,
      allowPlaintext: s.IMAP_ALLOW_PLAINTEXT,
      caFile: s.IMAP_CA_FILE,
      timeoutMs: s.IMAP_TIMEOUT_MS,
      maxConcurrency: s.IMAP_MAX_CONCURRENCY,
      queueLimit: s.IMAP_QUEUE_LIMIT,
      forwardClientIp: s.IMAP_FORWARD_CLIENT_IP,
    },
    envRefuse('IMAP'),
  );
}

/** The directory of the LDAP_* settings (contract §8). */
function ldapFromEnvironment(s: CleanedSettings): LdapSettings {
  return ldapSettings(
    {
      url: s.LDAP_URL,
      security: s.LDAP_SECURITY,
      allowPlaintext: s.LDAP_ALLOW_PLAINTEXT,
      caFile: s.LDAP_CA_FILE,
      userDn: s.LDAP_USER_DN,
      bindDn: s.LDAP_BIND_DN,
      bindPassword: s.LDAP_BIND_PASSWORD,
      baseDn: s.LDAP_BASE_DN,
      userFilter: s.LDAP_USER_FILTER,
      timeoutMs: s.LDAP_TIMEOUT_MS,
      maxConcurrency: s.LDAP_MAX_CONCURRENCY,
      queueLimit: s.LDAP_QUEUE_LIMIT,
    },
    envRefuse('LDAP'),
  );
}

/** The backend specs of the environment settings, in AUTH_BACKENDS order. */
export function backendsFromEnvironment(s: CleanedSettings, imap: ConfiguredImap): ConfiguredBackend[] {
  return s.AUTH_BACKENDS.map(
    (kind): ConfiguredBackend =>
      kind === 'imap'
        ? { kind, name: 'imap', domains: null, imap }
        : { kind, name: 'ldap', domains: null, ldap: ldapFromEnvironment(s) },
  );
}

/** The group sync's deadline and page size, from the environment whichever way the directory is named. */
export const syncLimits = (s: CleanedSettings) => ({
  timeoutMs: s.GROUP_SYNC_TIMEOUT_MS,
  pageSize: s.GROUP_SYNC_PAGE_SIZE,
});

/** The group sync of the LDAP_GROUP_* settings over the LDAP_* directory, or null (§11). */
export function groupSyncFromEnvironment(s: CleanedSettings) {
  if (s.LDAP_GROUP_BASE_DN === undefined) return null;
  const directory = groupSyncSettings(
    {
      baseDn: s.LDAP_GROUP_BASE_DN,
      filter: s.LDAP_GROUP_FILTER,
      classroomFilter: s.LDAP_GROUP_CLASSROOM_FILTER,
      usernameAttribute: s.LDAP_USERNAME_ATTRIBUTE,
      idAttribute: s.LDAP_GROUP_ID_ATTRIBUTE,
      shortDescriptionAttribute: s.LDAP_GROUP_SHORT_DESCRIPTION_ATTRIBUTE,
      activitiesAttribute: s.LDAP_GROUP_ACTIVITIES_ATTRIBUTE,
    },
    ldapFromEnvironment(s),
    syncLimits(s),
    envRefuse('LDAP'),
  );
  return { backend: 'ldap', directory };
}
