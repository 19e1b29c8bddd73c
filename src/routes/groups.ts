// /api/group/ and /api/group/{id} (contract §3).
import type { FastifyReply, FastifyRequest } from 'fastify';
import { readCookies } from '../cookies.ts';
import { API_ERRORS, ApiError } from '../errors.ts';
import { groupDetail, myGroups, parseGroupId } from '../groups.ts';
import { SCHEMAS } from '../schemas.ts';
import type { Sessions } from '../sessions.ts';
import type { GroupStore } from '../store/types.ts';
import type { Endpoint } from '../wire.ts';

export interface GroupRouteDeps {
  readonly sessions: Sessions;
  readonly groups: GroupStore;
}

/** The two group endpoints; both need a logged-in session. */
export function groupEndpoints(deps: GroupRouteDeps): Endpoint[] {
  const caller = async (request: FastifyRequest): Promise<string> => {
    const username = await deps.sessions.resolve(readCookies(request.headers).sessionid);
    if (username === null) throw new ApiError(API_ERRORS.NOT_AUTHENTICATED);
    return username;
  };

  const list = async (request: FastifyRequest, reply: FastifyReply) => {
    const username = await caller(request);
    // Serialized by the route's response schema: exactly the contract's fields, nothing more.
    return reply.code(200).send(await myGroups(deps.groups, username));
  };

  const detail = async (request: FastifyRequest<{ Params: { id: string } }>, reply: FastifyReply) => {
    // The route only matches digits; the range is checked here (after the session, like DRF's lookup).
    const username = await caller(request);
    const id = parseGroupId(request.params.id);
    const group = id === null ? null : await groupDetail(deps.groups, id, username);
    if (group === null) throw new ApiError(API_ERRORS.NOT_FOUND);
    return reply.code(200).send(group);
  };

  return [
    {
      path: '/api/group',
      matches: /^\/api\/group\/?$/,
      name: 'Group List',
      handlers: { GET: list },
      schemas: { GET: SCHEMAS.groupList },
    },
    {
      path: '/api/group/:id(^\\d+$)',
      matches: /^\/api\/group\/[0-9]+\/?$/,
      name: 'Group Detail',
      handlers: { GET: detail as Endpoint['handlers']['GET'] & object },
      schemas: { GET: SCHEMAS.groupDetail },
    },
  ];
}
