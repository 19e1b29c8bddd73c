// Joining and running a group (contract §13): GET /api/groups (the search), POST and DELETE
// /api/group/{id}/membership (ask, withdraw, leave), and for the group's administrators GET
// /api/group/{id}/members, PUT and DELETE /api/group/{id}/members/{username}, PATCH
// /api/group/{id}/texts. Each needs a live session (requireSession); the unsafe ones pass the CSRF
// check first (§7), and §1's Allow, OPTIONS, HEAD and 405 come from the endpoint declaration. What a
// membership may become is decided in one place (groups/membership.ts), inside the store's
// transaction; every change writes one audit line (actor, group, username, from, to).
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { UsernameCase } from '../auth/username.ts';
import { checkUsername } from '../groups/import-fields.ts';
import {
  decideMembership,
  isAdministrator,
  type MembershipAction,
  type MembershipActor,
  type MembershipDecision,
  type MembershipRefusal,
  membershipLock,
} from '../groups/membership.ts';
import { parseGroupId } from '../groups/read.ts';
import { searchGroups } from '../groups/search.ts';
import { directoryTextErrors, type EditableText, parseTexts } from '../groups/texts.ts';
import { API_ERRORS, ApiError, type ApiErrorSpec, FieldErrors } from '../http/api-errors.ts';
import type { DeclareEndpoint } from '../http/endpoints.ts';
import { sendJson } from '../http/headers.ts';
import { csrfGuard } from '../http/route-helpers.ts';
import { caller, type SessionHooks } from '../http/session.ts';
import type {
  GroupStore,
  MemberStatus,
  MembershipChanged,
  StoredMemberStatus,
} from '../store/group-types.ts';
import { MEMBERSHIP_SCHEMAS } from './memberships-schemas.ts';

export interface MembershipRouteDeps {
  readonly trustedOrigins: readonly string[];
  readonly usernameCase: UsernameCase;
  readonly hooks: SessionHooks;
  readonly groups: GroupStore;
  /** The texts a synced group takes from the directory (contract §13: those cannot be edited). */
  readonly directoryTexts: ReadonlySet<EditableText>;
}

/** How each refusal of the rules is answered. */
const REFUSALS: Record<MembershipRefusal, ApiErrorSpec> = {
  'not-administrator': API_ERRORS.PERMISSION_DENIED,
  'not-member': API_ERRORS.NOT_FOUND,
  'last-administrator': API_ERRORS.LAST_ADMINISTRATOR,
  'directory-managed': API_ERRORS.DIRECTORY_MANAGED,
  'not-a-transition': API_ERRORS.NOT_A_TRANSITION,
};

/** Seconds-precision ISO time, as every time the API answers (contract §9). */
const isoSeconds = (ms: number | null) =>
  ms === null ? null : new Date(Math.floor(ms / 1000) * 1000).toISOString().replace('.000Z', 'Z');

/** The group id of the path, or the contract's 404 (§3: the same rule as the group detail). */
function groupIdOf(request: FastifyRequest<{ Params: { id: string } }>): number {
  const id = parseGroupId(request.params.id);
  if (id === null) throw new ApiError(API_ERRORS.NOT_FOUND);
  return id;
}

/** The query string of `request` as Django reads it. */
const queryOf = (request: FastifyRequest) => new URL(request.url, 'http://localhost').searchParams;

/** The member_status of a PUT body: 1 or 2 (DRF's ChoiceField accepts the number or its text). */
function parseMemberStatus(body: unknown): 1 | 2 {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw new ApiError(API_ERRORS.NOT_A_DICTIONARY);
  }
  const fields: Record<string, string[]> = {};
  for (const key of Object.keys(body)) {
    if (key !== 'member_status') fields[key] = ['This field cannot be changed here.'];
  }
  const value = (body as Record<string, unknown>)['member_status'];
  let status: 1 | 2 | null = null;
  if (value === undefined) fields['member_status'] = ['This field is required.'];
  else if (value === 1 || value === 2 || value === '1' || value === '2') status = Number(value) as 1 | 2;
  else
    fields['member_status'] = [
      `"${typeof value === 'string' ? value : JSON.stringify(value)}" is not a valid choice.`,
    ];
  if (Object.keys(fields).length > 0 || status === null) throw new FieldErrors(fields);
  return status;
}

/** The endpoints of contract §13. */
export function registerMembershipRoutes(endpoint: DeclareEndpoint, deps: MembershipRouteDeps): void {
  const { requireSession } = deps.hooks;
  const { groups } = deps;
  const guard = csrfGuard(deps.trustedOrigins);

  /** A username of the path as stored; '' (nobody's) when it cannot be one, so the rules answer as for an unknown user. */
  const targetOf = (raw: string) => {
    const checked = checkUsername(raw, deps.usernameCase);
    return 'username' in checked ? checked.username : '';
  };

  /**
   * Asks the rules, in the store's transaction, and writes the audit line of a change; throws the
   * contract's answer for a refusal or an unknown group.
   */
  async function change(
    request: FastifyRequest,
    group: number,
    actor: MembershipActor,
    target: string,
    action: MembershipAction,
  ): Promise<MembershipChanged<MembershipDecision>> {
    const username = caller(request);
    const done = await groups.changeMembership(
      { group, actor: username, target, lock: membershipLock(action) },
      (facts) => decideMembership(actor, action, facts),
    );
    if (done === null) throw new ApiError(API_ERRORS.NOT_FOUND);
    if (!done.decision.ok) throw new ApiError(REFUSALS[done.decision.refusal]);
    if (done.written) {
      request.log.info(
        {
          audit: 'membership',
          actor: username,
          group,
          username: target,
          from: done.facts.targetStatus,
          to: done.status,
        },
        'membership changed',
      );
    }
    return done;
  }

  const memberRow = (username: string, status: MemberStatus, since: number | null) => ({
    username,
    member_status: status,
    since: isoSeconds(since),
  });

  endpoint({ url: '/api/groups', name: 'Group Search' }, (routes) =>
    routes.get({ schema: MEMBERSHIP_SCHEMAS.search, preHandler: requireSession }, async (request, reply) => {
      // DRF's page links are absolute: this request's own URL (Host checked by ALLOWED_HOSTS, §7).
      const base = `${request.protocol}://${request.host}${request.url.split('?')[0]}`;
      const found = await searchGroups(groups, caller(request), queryOf(request), base);
      if (found.kind === 'invalid') throw new FieldErrors(found.fields);
      if (found.kind === 'invalid-page') throw new ApiError(API_ERRORS.INVALID_PAGE);
      return reply.code(200).send(found.page);
    }),
  );

  endpoint({ url: '/api/group/:id(^\\d+$)/membership', name: 'Membership', beforeBody: guard }, (routes) => {
    routes.post<{ Params: { id: string } }>(
      { schema: MEMBERSHIP_SCHEMAS.ask, preHandler: requireSession },
      async (request, reply) => {
        const done = await change(request, groupIdOf(request), 'self', caller(request), { kind: 'ask' });
        // contract §13: 201 when the request was made now, 200 with the status it already had.
        return reply.code(done.written ? 201 : 200).send({ member_status: done.status });
      },
    );
    routes.delete<{ Params: { id: string } }>(
      { schema: MEMBERSHIP_SCHEMAS.leave, preHandler: requireSession },
      async (request, reply) => {
        await change(request, groupIdOf(request), 'self', caller(request), { kind: 'remove' });
        return reply.code(204).send();
      },
    );
  });

  endpoint({ url: '/api/group/:id(^\\d+$)/members', name: 'Group Members' }, (routes) =>
    routes.get<{ Params: { id: string } }>(
      { schema: MEMBERSHIP_SCHEMAS.members, preHandler: requireSession },
      async (request, reply) => {
        const group = groupIdOf(request);
        const statusText = queryOf(request).getAll('status').at(-1) ?? '';
        let status: StoredMemberStatus | null = null;
        if (statusText === '0' || statusText === '1' || statusText === '2') {
          status = Number(statusText) as StoredMemberStatus;
        }
        const found = await groups.members(group, caller(request), status);
        if (found === null) throw new ApiError(API_ERRORS.NOT_FOUND);
        if (!isAdministrator(found.actorStatus)) throw new ApiError(API_ERRORS.PERMISSION_DENIED);
        // After the permission check: a bad filter tells nothing to someone who may not list.
        if (statusText !== '' && status === null) {
          throw new FieldErrors({
            status: [`Select a valid choice. ${statusText} is not one of the available choices.`],
          });
        }
        const rows = found.members.map((m) => memberRow(m.username, m.status, m.since));
        return sendJson(reply, 200, JSON.stringify(rows));
      },
    ),
  );

  type MemberParams = { Params: { id: string; username: string } };
  endpoint(
    { url: '/api/group/:id(^\\d+$)/members/:username', name: 'Group Member', beforeBody: guard },
    (routes) => {
      routes.put<MemberParams>(
        { schema: MEMBERSHIP_SCHEMAS.setMember, preHandler: requireSession },
        async (request, reply) => {
          const group = groupIdOf(request);
          const status = parseMemberStatus(request.body);
          const target = targetOf(request.params.username);
          const done = await change(request, group, 'administrator', target, { kind: 'set', status });
          return reply.code(200).send(memberRow(target, done.status, done.since));
        },
      );
      routes.delete<MemberParams>(
        { schema: MEMBERSHIP_SCHEMAS.removeMember, preHandler: requireSession },
        async (request, reply) => {
          const group = groupIdOf(request);
          await change(request, group, 'administrator', targetOf(request.params.username), {
            kind: 'remove',
          });
          return reply.code(204).send();
        },
      );
    },
  );

  endpoint({ url: '/api/group/:id(^\\d+$)/texts', name: 'Group Texts', beforeBody: guard }, (routes) =>
    routes.patch<{ Params: { id: string } }>(
      { schema: MEMBERSHIP_SCHEMAS.texts, preHandler: requireSession },
      async (request: FastifyRequest<{ Params: { id: string } }>, reply: FastifyReply) => {
        const group = groupIdOf(request);
        const parsed = parseTexts(request.body);
        const username = caller(request);
        // The permission is decided before the body's fields are judged: a non-administrator
        // learns nothing from them.
        const done = await groups.changeTexts(
          group,
          username,
          parsed.kind === 'texts' ? parsed.texts : {},
          (facts) => {
            if (!isAdministrator(facts.actorStatus)) return new ApiError(API_ERRORS.PERMISSION_DENIED);
            if (parsed.kind === 'not_a_dictionary') return new ApiError(API_ERRORS.NOT_A_DICTIONARY);
            if (parsed.kind === 'invalid') return new FieldErrors(parsed.fields);
            const fromDirectory = facts.directoryManaged
              ? directoryTextErrors(parsed.texts, deps.directoryTexts)
              : null;
            return fromDirectory === null ? null : new FieldErrors(fromDirectory);
          },
        );
        if (done === null) throw new ApiError(API_ERRORS.NOT_FOUND);
        if ('refused' in done) throw done.refused;
        if (parsed.kind === 'texts' && Object.keys(parsed.texts).length > 0) {
          request.log.info(
            { audit: 'group texts', actor: username, group, fields: Object.keys(parsed.texts) },
            'group texts changed',
          );
        }
        return reply.code(200).send(done.group);
      },
    ),
  );
}
