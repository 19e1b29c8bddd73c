// Rows into the types of store/types.ts, once for both engines. SQLite answers INTEGER columns as
// numbers and booleans as 0/1; PostgreSQL answers BIGINT as strings and booleans as booleans:
// Number() and `Number(x) === 1` read both the same way.

import type { Group, GroupDetail, Membership, StoredMemberStatus } from '../group-types.ts';
import type { SessionRecord, SignInMethod, StoredPasskey, StoredSession, UserRecord } from '../types.ts';
import type { Row } from './driver.ts';

export const GROUP_COLUMNS = 'g.id, g.name, g.description, g.short_description, g.activities, g.type';
export const USER_COLUMNS = 'username, active, created_at, last_login_at, password_sign_in';

const isTrue = (value: unknown) => Number(value) === 1;
const numberOrNull = (value: unknown) => (value === null ? null : Number(value));
const textOrNull = (value: unknown) => (value === null ? null : String(value));

export function toGroup(row: Row): Group {
  return {
    id: Number(row['id']),
    name: String(row['name']),
    description: String(row['description']),
    short_description: String(row['short_description']),
    activities: String(row['activities']),
    type: Number(row['type']) === 1 ? 1 : 0,
  };
}

/** A group with the caller's member_status; anything but 0, 1 or 2 (no membership) is −1. */
export function toGroupDetail(row: Row): GroupDetail {
  const status = Number(row['member_status']);
  return { ...toGroup(row), member_status: status === 0 || status === 1 || status === 2 ? status : -1 };
}

export function toUser(row: Row): UserRecord {
  return {
    username: String(row['username']),
    active: isTrue(row['active']),
    createdAt: Number(row['created_at']),
    lastLoginAt: numberOrNull(row['last_login_at']),
    passwordSignIn: isTrue(row['password_sign_in']),
  };
}

export function toExportedUser(row: Row): { username: string; active: boolean } {
  return { username: String(row['username']), active: isTrue(row['active']) };
}

export function toMembership(row: Row): Membership {
  return {
    group: Number(row['group_id']),
    username: String(row['username']),
    status: Number(row['status']) as StoredMemberStatus,
  };
}

export const SESSION_COLUMNS =
  'id_hash, created_at, expires_at, last_seen, client_ip, user_agent, sign_in_method, passkey';

/** SQLite answers a BLOB as a Uint8Array, pg a bytea as a Buffer. */
export function toStoredSession(row: Row): StoredSession {
  return {
    idHash: Buffer.from(row['id_hash'] as Uint8Array),
    createdAt: Number(row['created_at']),
    expiresAt: Number(row['expires_at']),
    lastSeen: numberOrNull(row['last_seen']),
    clientIp: textOrNull(row['client_ip']),
    userAgent: textOrNull(row['user_agent']),
    method: textOrNull(row['sign_in_method']) as SignInMethod | null,
    passkey: textOrNull(row['passkey']),
  };
}

export const PASSKEY_COLUMNS =
  'handle, username, credential_id, public_key, counter, transports, backed_up, name, created_at, last_used_at, cloned_at';

export function toPasskey(row: Row): StoredPasskey {
  return {
    handle: String(row['handle']),
    username: String(row['username']),
    credentialId: Buffer.from(row['credential_id'] as Uint8Array),
    publicKey: Buffer.from(row['public_key'] as Uint8Array),
    counter: Number(row['counter']),
    transports: JSON.parse(String(row['transports'])) as string[],
    backedUp: isTrue(row['backed_up']),
    name: String(row['name']),
    createdAt: Number(row['created_at']),
    lastUsedAt: numberOrNull(row['last_used_at']),
    clonedAt: numberOrNull(row['cloned_at']),
  };
}

export function toSessionRecord(row: Row): SessionRecord {
  return { username: String(row['username']), expiresAt: Number(row['expires_at']) };
}
