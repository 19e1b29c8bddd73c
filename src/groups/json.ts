// The JSON of the two group answers (contract §3), written as the routes' response schemas serialise
// them (routes/groups-schemas.ts: group, groupDetail), byte for byte: the group memory
// (store/freshness/group-memory.ts) keeps and sends these, and test/caches/groups-cached-json.test.ts
// compares the two. An answer made only of ASCII is a string the socket is sent as latin1 (one byte a
// character, no encoding: UTF-8 encoding of a 5 KiB list cost 4 µs a request); one with any other
// character is its UTF-8 bytes (JsonBytes).
import type { Group, GroupJson, JsonBytes } from '../store/group-types.ts';

const isAscii = (json: string) => Buffer.byteLength(json) === json.length;
const bytesOf = (json: string): JsonBytes => (isAscii(json) ? json : Buffer.from(json));
const textOf = (json: JsonBytes): string => (typeof json === 'string' ? json : json.toString());

/** The group answers' JSON; each group's is written once and reused by every answer it is part of. */
export const GROUP_JSON: GroupJson = {
  // Exactly the schema's fields, in its order.
  group: (g: Group) =>
    bytesOf(
      JSON.stringify({
        id: g.id,
        name: g.name,
        description: g.description,
        short_description: g.short_description,
        activities: g.activities,
        type: g.type,
      }),
    ),
  list: (groups) => {
    const text = `[${groups.map(textOf).join(',')}]`;
    return groups.every((group) => typeof group === 'string') ? text : Buffer.from(text);
  },
  // The detail's fields are the group's, then member_status (routes/groups-schemas.ts: groupDetail).
  detail: (group, memberStatus) => {
    const detail = `${textOf(group).slice(0, -1)},"member_status":${memberStatus}}`;
    return typeof group === 'string' ? detail : Buffer.from(detail);
  },
};
