// JSON schemas of /api/group/ and /api/group/{id} (contract §3): the response schema is what
// serializes a group, exactly the contract's fields; @fastify/swagger publishes them in /api/schema.
import type { FastifySchema } from 'fastify';
import { API_ERRORS } from '../http/api-errors.ts';
import { cookieAuth, detail, notAuthenticated, unavailable } from '../http/openapi.ts';
import { GROUP_LIMITS, MAX_GROUP_ID } from '../store/limits.ts';

const group = {
  type: 'object',
  properties: {
    id: { type: 'integer', minimum: 1, maximum: MAX_GROUP_ID },
    name: { type: 'string', minLength: 1, maxLength: GROUP_LIMITS.name },
    description: { type: 'string', maxLength: GROUP_LIMITS.description },
    short_description: {
      type: 'string',
      maxLength: GROUP_LIMITS.short_description,
      description: 'Requirement to join the group.',
    },
    activities: { type: 'string', maxLength: GROUP_LIMITS.activities },
    type: { type: 'integer', enum: [0, 1], description: '0 = normal group, 1 = classroom.' },
  },
  required: ['id', 'name', 'description', 'short_description', 'activities', 'type'],
  additionalProperties: false,
} as const;

const groupDetail = {
  ...group,
  properties: {
    ...group.properties,
    member_status: {
      type: 'integer',
      enum: [-1, 0, 1, 2],
      description: "The caller's membership: -1 not a member, 0 request pending, 1 member, 2 administrator.",
    },
  },
  required: [...group.required, 'member_status'],
};

export const GROUP_SCHEMAS = {
  groupList: {
    summary: "The caller's groups: those where they are a member or an administrator, by id.",
    tags: ['groups'],
    security: cookieAuth,
    response: {
      200: { description: 'The groups.', type: 'array', items: group },
      403: notAuthenticated,
      503: unavailable,
    },
  },
  groupDetail: {
    summary: "One group, with the caller's membership status.",
    tags: ['groups'],
    security: cookieAuth,
    params: {
      type: 'object',
      properties: {
        id: { type: 'string', pattern: '^[0-9]+$', description: 'Group id; leading zeros allowed.' },
      },
      required: ['id'],
    },
    response: {
      200: { description: 'The group.', ...groupDetail },
      403: notAuthenticated,
      404: {
        description: 'No such group, or an id that is not one.',
        ...detail(API_ERRORS.NOT_FOUND.detail),
      },
      503: unavailable,
    },
  },
} as const satisfies Record<string, FastifySchema>;
