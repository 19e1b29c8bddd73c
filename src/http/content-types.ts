// Request bodies (contract §3): only JSON and form bodies are read, each at most 64 KiB; anything else
// is a 415 (Fastify's FST_ERR_CTP_INVALID_MEDIA_TYPE, worded in errors.ts).
import formbody from '@fastify/formbody';
import type { FastifyInstance } from 'fastify';
import secureJsonParse from 'secure-json-parse';
import { jsonParseError } from './api-errors.ts';

/** contract §1: bodies over 64 KiB → 413. */
export const BODY_LIMIT_BYTES = 64 * 1024;

/** Replaces Fastify's parsers with the two the API accepts. */
export async function installContentTypes(app: FastifyInstance): Promise<void> {
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (_request, body, done) => {
    if (body === '') return done(jsonParseError('Unexpected end of JSON input'), undefined);
    try {
      // A __proto__ or constructor key is refused rather than merged (prototype pollution).
      done(null, secureJsonParse(body as string, { protoAction: 'error', constructorAction: 'error' }));
    } catch (err) {
      done(jsonParseError(err instanceof Error ? err.message.slice(0, 200) : 'invalid JSON'), undefined);
    }
  });
  await app.register(formbody, { bodyLimit: BODY_LIMIT_BYTES });
}
