// /api/group/ and /api/group/{id} (contract §3); both need a logged-in session (requireSession).
// A store that keeps the groups in memory answers them there: on the raw read path for a session
// the cache knows, and in the route before the database (the same reader, one in-memory answer).
import type { Sessions } from '../auth/sessions.ts';
import { groupDetail, groupDetailJson, myGroups, myGroupsJson, parseGroupId } from '../groups/read.ts';
import { API_ERRORS, ApiError } from '../http/api-errors.ts';
import type { DeclareEndpoint } from '../http/endpoints.ts';
import { sendJson } from '../http/headers.ts';
import type { FastAnswer, FastRequest } from '../http/raw-reads.ts';
import { caller, type SessionHooks } from '../http/session.ts';
import type { GroupStore } from '../store/group-types.ts';
import { GROUP_SCHEMAS } from './groups-schemas.ts';

export interface GroupRouteDeps {
  readonly hooks: SessionHooks;
  readonly sessions: Sessions;
  readonly groups: GroupStore;
}

/** 200 with the cached JSON; a string is ASCII (the group cache's contract), sent as latin1. */
const cached = (body: string | Buffer | undefined): FastAnswer | undefined =>
  body === undefined ? undefined : { status: 200, body, ascii: typeof body === 'string' };

/** The two group endpoints. */
export function registerGroupRoutes(endpoint: DeclareEndpoint, deps: GroupRouteDeps): void {
  const { requireSession } = deps.hooks;
  const { sessions, groups } = deps;
  // The raw read path's readers: a session the cache knows, and its answer from memory (403 and 404
  // are the routes' to give).
  const fastList = ({ sessionid }: FastRequest) => {
    const username = sessions.peek(sessionid);
    return typeof username === 'string' ? cached(myGroupsJson(groups, username)) : undefined;
  };
  const fastDetail = ({ sessionid, params }: FastRequest) => {
    const username = sessions.peek(sessionid);
    const id = parseGroupId(params['id'] ?? '');
    if (typeof username !== 'string' || id === null) return undefined;
    return cached(groupDetailJson(groups, id, username));
  };
  // Serialized by the route's response schema: exactly the contract's fields, nothing more. A store
  // with a group cache hands over the same bytes already serialized
  // (test/caches/groups-cached-json.test.ts compares the two), sent as is with the same status and
  // headers.
  endpoint({ url: '/api/group', name: 'Group List', fast: fastList }, (routes) =>
    routes.get({ schema: GROUP_SCHEMAS.groupList, preHandler: requireSession }, async (request, reply) => {
      const username = caller(request);
      const json = myGroupsJson(deps.groups, username);
      if (json !== undefined) return sendJson(reply, 200, json);
      return reply.code(200).send(await myGroups(deps.groups, username));
    }),
  );
  // contract §3: the id is [0-9]+, leading zeros allowed, of any length (app.ts: maxParamLength);
  // the route only matches digits, and the range is checked after the session, like DRF's lookup.
  endpoint({ url: '/api/group/:id(^\\d+$)', name: 'Group Detail', fast: fastDetail }, (routes) =>
    routes.get<{ Params: { id: string } }>(
      { schema: GROUP_SCHEMAS.groupDetail, preHandler: requireSession },
      async (request, reply) => {
        const id = parseGroupId(request.params.id);
        if (id === null) throw new ApiError(API_ERRORS.NOT_FOUND);
        const username = caller(request);
        const json = groupDetailJson(deps.groups, id, username);
        if (json !== undefined) return sendJson(reply, 200, json);
        const group = await groupDetail(deps.groups, id, username);
        if (group === null) throw new ApiError(API_ERRORS.NOT_FOUND);
        return reply.code(200).send(group);
      },
    ),
  );
}
