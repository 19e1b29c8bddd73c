// contract §13, as the browser calls it: finding a group, asking to join or leaving, and the
// administrators' members and texts. Every write goes through api.ts's request (CSRF token, §7).
import { type GroupDetail, type GroupType, type MemberStatus, request } from './api.ts';

/** One result of GET /api/groups. */
export interface FoundGroup {
  readonly id: number;
  readonly name: string;
  readonly short_description: string;
  readonly type: GroupType;
  readonly member_status: MemberStatus;
}

/** DRF's page shape; `next`/`previous` are links or null. */
export interface GroupPage {
  readonly count: number;
  readonly next: string | null;
  readonly previous: string | null;
  readonly results: readonly FoundGroup[];
}

/** contract §13: 50 results a page. */
export const PAGE_SIZE = 50;

export interface GroupQuery {
  /** The search text; empty lists every group. */
  readonly q: string;
  /** null: both kinds. */
  readonly type: GroupType | null;
  /** From 1. */
  readonly page: number;
}

/** The query string of a search, without the parameters that say nothing (empty text, all types, page 1). */
export function queryString(query: GroupQuery): string {
  const params = new URLSearchParams();
  if (query.q !== '') params.set('q', query.q);
  if (query.type !== null) params.set('type', String(query.type));
  if (query.page > 1) params.set('page', String(query.page));
  const text = params.toString();
  return text === '' ? '' : `?${text}`;
}

/** GET /api/groups: one page of every group matching the query, by name. */
export const searchGroups = (query: GroupQuery) =>
  request<GroupPage>('GET', `/api/groups${queryString(query)}`);

/** POST /api/group/{id}/membership: ask to join; answers the caller's status (0, or what it already was). */
export const askToJoin = (id: number) =>
  request<{ member_status: MemberStatus }>('POST', `/api/group/${id}/membership`);

/** DELETE /api/group/{id}/membership: withdraw a request or leave (204). */
export const leaveGroup = (id: number) => request<null>('DELETE', `/api/group/${id}/membership`);

/** One row of GET /api/group/{id}/members. */
export interface MemberRow {
  readonly username: string;
  readonly member_status: 0 | 1 | 2;
  /** ISO 8601: when the request was made or the status last changed (null if not known). */
  readonly since: string | null;
}

/** GET /api/group/{id}/members (administrators only): requests first, then by username. */
export const listMembers = (id: number) => request<MemberRow[]>('GET', `/api/group/${id}/members`);

const memberPath = (id: number, username: string) =>
  `/api/group/${id}/members/${encodeURIComponent(username)}`;

/** PUT /api/group/{id}/members/{username}: approve a request (1), make an administrator (2) or a member (1). */
export const setMemberStatus = (id: number, username: string, status: 1 | 2) =>
  request<MemberRow>('PUT', memberPath(id, username), { member_status: status });

/** DELETE /api/group/{id}/members/{username}: refuse a request or remove someone (204). */
export const removeMember = (id: number, username: string) =>
  request<null>('DELETE', memberPath(id, username));

/** The texts an administrator can edit (contract §4's limits, in characters). */
export const TEXT_LIMITS = {
  description: 10_000,
  short_description: 500,
  activities: 10_000,
} as const;

export type GroupTexts = { -readonly [K in keyof typeof TEXT_LIMITS]?: string };

/** PATCH /api/group/{id}/texts: 200 answers the group as GET /api/group/{id} shows it. */
export const editTexts = (id: number, texts: GroupTexts) =>
  request<GroupDetail>('PATCH', `/api/group/${id}/texts`, texts);
