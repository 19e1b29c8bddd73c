// The group sync's settings (contract §11): the LDAP_GROUP_* and GROUP_SYNC_* rows of the settings
// table (where the groups are in the directory, which attributes hold what, how often the service
// syncs), and the rules they obey whether they come from the environment (over the LDAP_* directory
// and service account, environment.ts) or from AUTH_CONFIG (a `groups` object in one `ldap` entry,
// over that entry's directory and account, auth-config.ts). The result is the group reader's own
// option type (backends/ldap/groups/reader.ts).
import { EnvError, makeValidator } from 'envalid';
import type { GroupDirectorySettings } from '../../backends/ldap/groups/reader.ts';
import type { LdapSettings } from '../../backends/ldap/settings.ts';
import type { RemovalLimit } from '../../groups/sync/removal-guard.ts';
import type { Refuse } from '../error.ts';
import { integer, row, text } from '../settings-parsers.ts';

/** RFC 4512 §1.4: an attribute description's type, a descr or a numericoid. */
const attributeName = makeValidator<string>((raw) => {
  if (!/^([A-Za-z][A-Za-z0-9-]*|[0-9]+(\.[0-9]+)+)$/.test(raw))
    throw new EnvError(`expected an attribute name like uid or entryUUID, got "${raw}"`);
  return raw;
});

/** RFC 4515: a filter is parenthesised; the directory parses the rest (an error fails the run). */
const filter = makeValidator<string>((raw) => {
  if (!/^\(.*\)$/s.test(raw)) throw new EnvError(`expected a parenthesised LDAP filter, got "${raw}"`);
  return raw;
});

const DURATION_UNITS: Record<string, number> = { s: 1000, m: 60_000, h: 3_600_000 };

/** `15m`, `1h`, `90s`: at least a minute, at most a day (unset: no interval). */
const interval = makeValidator<number>((raw) => {
  const match = /^([0-9]+)(s|m|h)$/.exec(raw);
  const ms = match === null ? Number.NaN : Number(match[1]) * (DURATION_UNITS[match[2] ?? ''] ?? 0);
  if (!(ms >= 60_000 && ms <= 86_400_000))
    throw new EnvError(`expected a duration from 1m to 24h such as 15m, 1h or 90s got "${raw}"`);
  return ms;
});

/** GROUP_SYNC_MAX_REMOVALS's value: `25` (groups) or `10%` (of the synced groups); null when neither. */
export function parseRemovalLimit(raw: string): RemovalLimit | null {
  const match = /^([0-9]{1,9})(%?)$/.exec(raw.trim());
  if (match === null) return null;
  const value = Number(match[1]);
  if (match[2] === '') return { groups: value };
  return value <= 100 ? { percent: value } : null;
}

const removalLimit = makeValidator<string>((raw) => {
  if (parseRemovalLimit(raw) === null)
    throw new EnvError(`expected a number of groups such as 25, or a share from 0% to 100%, got "${raw}"`);
  return raw.trim();
});

const DEFAULT_GROUP_FILTER =
  '(|(objectClass=groupOfNames)(objectClass=groupOfUniqueNames)(objectClass=posixGroup))';

/** LDAP_GROUP_* and GROUP_SYNC_* rows, in table order. */
export const GROUP_SYNC_SETTINGS = {
  LDAP_GROUP_BASE_DN: row(
    text({
      default: undefined,
      desc: 'where the group sync reads groups (whole subtree); setting it turns on `clubhouse sync groups` over the `LDAP_*` directory and service account (docs/group-sync.md)',
    }),
    { unset: '(no group sync)' },
  ),
  LDAP_GROUP_FILTER: row(
    filter({ default: DEFAULT_GROUP_FILTER, desc: 'which entries under it are groups' }),
  ),
  LDAP_GROUP_CLASSROOM_FILTER: row(
    filter({
      default: undefined,
      desc: 'groups that also match this filter are classrooms (type 1), e.g. `(businessCategory=classroom)`',
    }),
    { unset: '(none: every group is type 0)' },
  ),
  LDAP_USERNAME_ATTRIBUTE: row(
    attributeName({
      default: 'uid',
      desc: 'the attribute of a user entry (under `LDAP_BASE_DN`) that a member DN is read back to: `uid`, `sAMAccountName`, `mail`',
    }),
  ),
  LDAP_GROUP_ID_ATTRIBUTE: row(
    attributeName({
      default: 'entryUUID',
      desc: "the directory's identity of a group, which survives renames and moves: `entryUUID` (OpenLDAP, 389 DS) or `objectGUID` (Active Directory)",
    }),
  ),
  LDAP_GROUP_SHORT_DESCRIPTION_ATTRIBUTE: row(
    attributeName({ default: undefined, desc: "the attribute read into a group's `short_description`" }),
    { unset: '(empty)' },
  ),
  LDAP_GROUP_ACTIVITIES_ATTRIBUTE: row(
    attributeName({ default: undefined, desc: "the attribute read into a group's `activities`" }),
    { unset: '(empty)' },
  ),
  GROUP_SYNC_INTERVAL: row(
    interval({
      default: undefined,
      desc: 'run the group sync inside the service this often (`15m`, `1h`), on one instance at a time',
    }),
    { unset: '(off)' },
  ),
  GROUP_SYNC_MAX_REMOVALS: row(
    removalLimit({
      default: '10%',
      desc: 'the most synced groups one run may remove: a number (`25`) or a share of the synced groups, rounded up (`10%`); a run that would remove more writes nothing and fails (the service logs it and sets `clubhouse_group_sync_removals_held`) until `clubhouse sync groups --allow-removals`',
    }),
  ),
  GROUP_SYNC_TIMEOUT_MS: row(
    integer(
      1000,
      3_600_000,
    )({
      default: 300_000,
      desc: "deadline of one sync's directory read: connect, TLS, bind and every page",
    }),
  ),
  GROUP_SYNC_PAGE_SIZE: row(
    integer(
      1,
      10_000,
    )({
      default: 500,
      desc: "entries per page of the sync's paged searches (RFC 2696); at most the directory's own page limit (Active Directory's MaxPageSize, 1000 by default)",
    }),
  ),
};

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
