// /api/group/ and /api/group/{id} (contract §3); both need a logged-in session (requireSession).
// A process that keeps the group pages in memory answers them there after the freshness gate's
// catch-up (docs/freshness.md): on the raw read path for a session kept in memory, and in the route,
// for the session the store found, before asking the store.
import type { Sessions } from '../auth/sessions.ts';
import { groupDetail, myGroups, parseGroupId } from '../groups/read.ts';
import { API_ERRORS, ApiError } from '../http/api-errors.ts';
import type { DeclareEndpoint } from '../http/endpoints.ts';
import { sendJson } from '../http/headers.ts';
import type { RawAnswer, RawRequest } from '../http/raw-reads.ts';
import { caller, type SessionHooks } from '../http/session.ts';
import type { GroupStore } from '../store/group-types.ts';
import type { FreshnessGate, GroupMemoryAnswers } from '../store/types.ts';
import { GROUP_SCHEMAS } from './groups-schemas.ts';

export interface GroupRouteDeps {
  readonly hooks: SessionHooks;
  readonly sessions: Sessions;
  readonly groups: GroupStore;
  /** The group pages kept in memory (null: none), and the gate that makes them exact. */
  readonly memory: GroupMemoryAnswers | null;
  readonly freshness: FreshnessGate;
}

/** A page from memory after a catch-up of the group memory; undefined: ask the store. */
async function pageFromMemory(
  freshness: FreshnessGate,
  read: () => string | Buffer | undefined,
): Promise<string | Buffer | undefined> {
  const catchingUp = freshness.catchUp(['groups']);
  if (catchingUp !== null) {
    try {
      await catchingUp;
    } catch {
      return undefined; // the store answers, or says it cannot (503)
    }
  }
  return freshness.answerFromMemory(read, ['groups']);
}

/** 200 with the JSON from memory; a string is ASCII (GroupJson's contract), sent as latin1. */
const fromMemory = (body: string | Buffer | undefined): RawAnswer | undefined =>
  body === undefined ? undefined : { status: 200, body, ascii: typeof body === 'string' };

/** The two group endpoints. */
export function registerGroupRoutes(endpoint: DeclareEndpoint, deps: GroupRouteDeps): void {
  const { requireSession } = deps.hooks;
  const { sessions, memory } = deps;
  // The raw read path's readers: a session kept in memory, and its answer from memory (nobody's 403
  // and an unknown group's 404 are the routes' to give).
  const listFromMemory = ({ sessionid }: RawRequest) => {
    const username = sessions.fromMemory(sessionid);
    return typeof username === 'string' ? fromMemory(memory?.list(username)) : undefined;
  };
  const detailFromMemory = ({ sessionid, params }: RawRequest) => {
    const username = sessions.fromMemory(sessionid);
    const id = parseGroupId(params['id'] ?? '');
    if (typeof username !== 'string' || id === null) return undefined;
    return fromMemory(memory?.detail(id, username));
  };
  // Serialized by the route's response schema: exactly the contract's fields, nothing more. Memory
  // holds the same bytes already serialized (test/caches/groups-cached-json.test.ts compares the
  // two), sent as is with the same status and headers.
  endpoint({ url: '/api/group', name: 'Group List', rawRead: listFromMemory }, (routes) =>
    routes.get({ schema: GROUP_SCHEMAS.groupList, preHandler: requireSession }, async (request, reply) => {
      const username = caller(request);
      const kept = () =>
        memory === null ? undefined : pageFromMemory(deps.freshness, () => memory.list(username));
      const json = await kept();
      if (json !== undefined) return sendJson(reply, 200, json);
      const found = await myGroups(deps.groups, username);
      // The store kept what it read: the answer is the list it built, read through the gate like any
      // answer from memory (the schema's serializer writing the same 5 KiB again was most of the
      // garbage a fill left: the list load's peak RSS fell by 20-40 MiB in the benchmark's 10 000 fills).
      const filled = await kept();
      if (filled !== undefined) return sendJson(reply, 200, filled);
      return reply.code(200).send(found);
    }),
  );
  // contract §3: the id is [0-9]+, leading zeros allowed, of any length (app.ts: maxParamLength);
  // the route only matches digits, and the range is checked after the session, like DRF's lookup.
  endpoint({ url: '/api/group/:id(^\\d+$)', name: 'Group Detail', rawRead: detailFromMemory }, (routes) =>
    routes.get<{ Params: { id: string } }>(
      { schema: GROUP_SCHEMAS.groupDetail, preHandler: requireSession },
      async (request, reply) => {
        const id = parseGroupId(request.params.id);
        if (id === null) throw new ApiError(API_ERRORS.NOT_FOUND);
        const username = caller(request);
        const json =
          memory === null
            ? undefined
            : await pageFromMemory(deps.freshness, () => memory.detail(id, username));
        if (json !== undefined) return sendJson(reply, 200, json);
        const group = await groupDetail(deps.groups, id, username);
        if (group === null) throw new ApiError(API_ERRORS.NOT_FOUND);
        return reply.code(200).send(group);
      },
    ),
  );
}
