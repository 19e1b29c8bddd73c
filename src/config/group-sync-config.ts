// The group sync's settings (contract §11), from the environment (LDAP_GROUP_*, over the LDAP_*
// directory and service account) or from AUTH_CONFIG (a `groups` object in one `ldap` backend's
// entry, over that entry's directory and service account). The rules are decided here once, for
// both; the result is the reader's own option type (backends/ldap/groups/reader.ts).
import type { LdapSettings } from '../backends/ldap/authenticator.ts';
import type { GroupDirectorySettings } from '../backends/ldap/groups/reader.ts';
import type { RemovalLimit } from '../groups/sync/removal-guard.ts';
import type { Refuse } from './backend-settings.ts';
import { DEFAULT_GROUP_FILTER } from './settings-group-sync.ts';

/** The `groups` fields before defaults (the environment's LDAP_GROUP_* or AUTH_CONFIG's object). */
export interface RawGroupSync {
  baseDn?: string;
  filter?: string;
  classroomFilter?: string;
  usernameAttribute?: string;
  idAttribute?: string;
  shortDescriptionAttribute?: string;
  activitiesAttribute?: string;
}

export interface GroupSyncConfig {
  /** The backend whose directory and service account the sync uses (`ldap` from the environment). */
  readonly backend: string;
  readonly directory: GroupDirectorySettings;
  /** GROUP_SYNC_INTERVAL in ms; null: only `clubhouse sync groups` runs it. */
  readonly intervalMs: number | null;
  /** GROUP_SYNC_MAX_REMOVALS: the most synced groups one run may remove. */
  readonly maxRemovals: RemovalLimit;
}

/** Defaults, and the rule a schema cannot say: the sync reads as the service account (contract §11). */
export function groupSyncSettings(
  raw: RawGroupSync,
  ldap: LdapSettings,
  limits: { readonly timeoutMs: number; readonly pageSize: number },
  refuse: Refuse,
): GroupDirectorySettings {
  if (raw.baseDn === undefined) refuse('groups.baseDn', 'required');
  if (ldap.bindDn === null || ldap.baseDn === null)
    refuse(
      'bindDn',
      'the group sync reads the directory as the service account: set a bind DN, its password and the user base DN',
    );
  return {
    ldap,
    groupBaseDn: raw.baseDn,
    groupFilter: raw.filter ?? DEFAULT_GROUP_FILTER,
    classroomFilter: raw.classroomFilter ?? null,
    usernameAttribute: raw.usernameAttribute ?? 'uid',
    idAttribute: raw.idAttribute ?? 'entryUUID',
    shortDescriptionAttribute: raw.shortDescriptionAttribute ?? null,
    activitiesAttribute: raw.activitiesAttribute ?? null,
    timeoutMs: limits.timeoutMs,
    pageSize: limits.pageSize,
  };
}
