// JSON schemas of joining and running a group (contract §13): the search, asking to join and
// leaving, the administrators' members list, their decisions and the texts' editor. Fastify shapes
// the responses with them and @fastify/swagger publishes them in /api/schema.
import type { FastifySchema } from 'fastify';
import { SEARCH_PAGE_SIZE, SEARCH_QUERY_MAX_LENGTH } from '../groups/search.ts';
import { API_ERRORS } from '../http/api-errors.ts';
import { cookieAuth, detail, notAuthenticated, unavailable } from '../http/openapi.ts';
import { GROUP_LIMITS, MAX_GROUP_ID, USERNAME_MAX_LENGTH } from '../store/limits.ts';
import { GROUP_SCHEMAS } from './groups-schemas.ts';

const memberStatus = {
  type: 'integer',
  enum: [-1, 0, 1, 2],
  description: "The caller's membership: -1 not a member, 0 request pending, 1 member, 2 administrator.",
} as const;

const groupId = {
  type: 'object',
  properties: {
    id: { type: 'string', pattern: '^[0-9]+$', description: 'Group id; leading zeros allowed.' },
  },
  required: ['id'],
} as const;

const groupAndUsername = {
  type: 'object',
  properties: {
    ...groupId.properties,
    username: { type: 'string', description: 'The member’s username (made canonical as a login’s).' },
  },
  required: ['id', 'username'],
} as const;

const fieldErrors = (description: string, field: string, example: string) => ({
  description,
  type: 'object',
  additionalProperties: { type: 'array', items: { type: 'string' } },
  examples: [{ [field]: [example] }],
});

const csrfOrNotAuthenticated = {
  description: 'No valid session, or a CSRF refusal (contract §7).',
  ...detail(API_ERRORS.NOT_AUTHENTICATED.detail),
};
const notAdministrator = {
  description: 'No valid session, a CSRF refusal, or the caller is not an administrator of the group.',
  ...detail(API_ERRORS.PERMISSION_DENIED.detail),
};
const noSuchGroup = { description: 'No such group.', ...detail(API_ERRORS.NOT_FOUND.detail) };
const conflict = {
  description:
    'It would leave the group without an administrator, the directory manages the group’s members, or a request is made an administrator before it is approved.',
  ...detail(API_ERRORS.LAST_ADMINISTRATOR.detail),
};

const searchHit = {
  type: 'object',
  properties: {
    id: { type: 'integer', minimum: 1, maximum: MAX_GROUP_ID },
    name: { type: 'string', minLength: 1, maxLength: GROUP_LIMITS.name },
    short_description: {
      type: 'string',
      maxLength: GROUP_LIMITS.short_description,
      description: 'Requirement to join the group.',
    },
    type: { type: 'integer', enum: [0, 1], description: '0 = normal group, 1 = classroom.' },
    member_status: memberStatus,
  },
  required: ['id', 'name', 'short_description', 'type', 'member_status'],
  additionalProperties: false,
} as const;

const member = {
  type: 'object',
  properties: {
    username: { type: 'string', minLength: 1, maxLength: USERNAME_MAX_LENGTH },
    member_status: {
      type: 'integer',
      enum: [0, 1, 2],
      description: '0 request pending, 1 member, 2 administrator.',
    },
    since: {
      type: ['string', 'null'],
      format: 'date-time',
      description: 'When the membership took this status; null for memberships older than the record.',
      examples: ['2026-11-22T10:00:00Z'],
    },
  },
  required: ['username', 'member_status', 'since'],
  additionalProperties: false,
} as const;

const ownStatus = {
  type: 'object',
  properties: { member_status: memberStatus },
  required: ['member_status'],
  additionalProperties: false,
} as const;

const text = (field: keyof typeof GROUP_LIMITS) => ({ type: 'string', maxLength: GROUP_LIMITS[field] });

export const MEMBERSHIP_SCHEMAS = {
  search: {
    summary: `Every group, for finding one to join: ${SEARCH_PAGE_SIZE} a page, by name.`,
    description:
      '`q` matches the name, short_description and description, case- and accent-insensitively; `type` keeps normal groups (0) or classrooms (1). The page shape of Django REST framework.',
    tags: ['groups'],
    security: cookieAuth,
    querystring: {
      type: 'object',
      properties: {
        q: { type: 'string', maxLength: SEARCH_QUERY_MAX_LENGTH },
        type: { type: 'string', enum: ['', '0', '1'] },
        page: { type: 'string', pattern: '^[0-9]+$', description: 'From 1.' },
      },
    },
    response: {
      200: {
        description: 'One page of the groups found.',
        type: 'object',
        properties: {
          count: { type: 'integer', minimum: 0 },
          next: { type: ['string', 'null'], format: 'uri' },
          previous: { type: ['string', 'null'], format: 'uri' },
          results: { type: 'array', items: searchHit },
        },
        required: ['count', 'next', 'previous', 'results'],
        additionalProperties: false,
      },
      400: fieldErrors(
        'A bad parameter, named.',
        'type',
        'Select a valid choice. 3 is not one of the available choices.',
      ),
      403: notAuthenticated,
      404: {
        description: 'A page number that is not one, or past the last page.',
        ...detail(API_ERRORS.INVALID_PAGE.detail),
      },
      503: unavailable,
    },
  },
  ask: {
    summary: 'Ask to join the group (idempotent: an existing membership is answered as it is).',
    tags: ['groups'],
    security: cookieAuth,
    params: groupId,
    response: {
      200: { description: 'Already pending, a member or an administrator: the status.', ...ownStatus },
      201: { description: 'Asked: the request is pending.', ...ownStatus },
      403: csrfOrNotAuthenticated,
      404: noSuchGroup,
      503: unavailable,
    },
  },
  leave: {
    summary: 'Withdraw a request, or leave the group (nothing to do is done too).',
    tags: ['groups'],
    security: cookieAuth,
    params: groupId,
    response: {
      204: { description: 'No membership any more; no body.', type: 'null' },
      403: csrfOrNotAuthenticated,
      404: noSuchGroup,
      409: {
        description:
          'The last administrator cannot leave, and the members of a group synced from the directory leave it there.',
        ...detail(API_ERRORS.LAST_ADMINISTRATOR.detail),
      },
      503: unavailable,
    },
  },
  members: {
    summary: "The group's requests and members, for its administrators: requests first, then by username.",
    tags: ['groups'],
    security: cookieAuth,
    params: groupId,
    querystring: {
      type: 'object',
      properties: { status: { type: 'string', enum: ['', '0', '1', '2'] } },
    },
    response: {
      200: { description: 'The members.', type: 'array', items: member },
      400: fieldErrors(
        'A bad status, named.',
        'status',
        'Select a valid choice. 3 is not one of the available choices.',
      ),
      403: notAdministrator,
      404: noSuchGroup,
      503: unavailable,
    },
  },
  setMember: {
    summary:
      'Approve a request (1), make a member an administrator (2), or an administrator a member again (1).',
    tags: ['groups'],
    security: cookieAuth,
    params: groupAndUsername,
    body: {
      type: 'object',
      properties: { member_status: { type: 'integer', enum: [1, 2] } },
      required: ['member_status'],
      additionalProperties: false,
    },
    response: {
      200: { description: 'The membership as it now is.', ...member },
      400: fieldErrors('A bad body, its fields named.', 'member_status', '"3" is not a valid choice.'),
      403: notAdministrator,
      404: {
        description:
          'No such group, or the username has no request or membership in it (or never signed in).',
        ...detail(API_ERRORS.NOT_FOUND.detail),
      },
      409: conflict,
      503: unavailable,
    },
  },
  removeMember: {
    summary: 'Refuse a request, or remove a member or an administrator (never the last administrator).',
    tags: ['groups'],
    security: cookieAuth,
    params: groupAndUsername,
    response: {
      204: { description: 'No membership any more; no body.', type: 'null' },
      403: notAdministrator,
      404: {
        description: 'No such group, or a username that never signed in.',
        ...detail(API_ERRORS.NOT_FOUND.detail),
      },
      409: conflict,
      503: unavailable,
    },
  },
  texts: {
    summary: "Edit the group's texts (any of them); the group as GET /api/group/{id} shows it.",
    tags: ['groups'],
    security: cookieAuth,
    params: groupId,
    body: {
      type: 'object',
      properties: {
        description: text('description'),
        short_description: { ...text('short_description'), description: 'Requirement to join the group.' },
        activities: text('activities'),
      },
      additionalProperties: false,
    },
    response: {
      200: { ...GROUP_SCHEMAS.groupDetail.response[200], description: 'The group, as its detail shows it.' },
      400: fieldErrors(
        'Bad fields named: too long, not text, not editable, or filled from the directory.',
        'name',
        'This field cannot be changed here.',
      ),
      403: notAdministrator,
      404: noSuchGroup,
      503: unavailable,
    },
  },
} as const satisfies Record<string, FastifySchema>;
