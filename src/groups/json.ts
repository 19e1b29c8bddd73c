// The JSON of the two group answers (contract §3), written as the routes' response schemas serialise
// them (routes/groups-schemas.ts: group, groupDetail), byte for byte: the group memory
// (store/freshness/group-memory.ts) keeps and sends these, and test/caches/groups-cached-json.test.ts
// compares the two. An answer made only of ASCII is a string the socket is sent as latin1 (one byte a
// character, no encoding: UTF-8 encoding of a 5 KiB list cost 4 µs a request); one with any other
// character is its UTF-8 bytes (JsonBytes).
import type { Group, GroupJson, JsonBytes, MemberStatus } from '../store/group-types.ts';

const isAscii = (json: string) => Buffer.byteLength(json) === json.length;
const bytesOf = (json: string): JsonBytes => (isAscii(json) ? json : Buffer.from(json));
const textOf = (json: JsonBytes): string => (typeof json === 'string' ? json : json.toString());
const detailEnding = (memberStatus: MemberStatus) => `,"member_status":${memberStatus}}`;
/** detailEnding's bytes for each status, at the status + 1. */
const DETAIL_ENDINGS = ([-1, 0, 1, 2] as const).map((status) => Buffer.from(detailEnding(status), 'latin1'));

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
  // From bytes, written as bytes: the group's without its closing brace, then the status's ending
  // (the kept bytes read as a string, cut, joined and flattened again for the socket were four
  // copies and three strings per request).
  detail: (group, memberStatus) => {
    if (typeof group === 'string') return `${group.slice(0, -1)}${detailEnding(memberStatus)}`;
    const ending = DETAIL_ENDINGS[memberStatus + 1]!;
    const cut = group.length - 1;
    const detail = Buffer.allocUnsafe(cut + ending.length);
    group.copy(detail, 0, 0, cut);
    ending.copy(detail, cut);
    return detail;
  },
};
