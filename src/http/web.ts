// The web client (contract §6: `/`): the app shell at `/`, `/group/{id}`, `/groups`, `/sessions` and `/passkeys` (deep links survive a
// reload), and the hashed assets under /assets, all read once at start-up from web/dist.
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { API_ERRORS, ApiError } from './api-errors.ts';
import { sendJson } from './headers.ts';

/** The page's Content-Security-Policy: nothing but this origin's own files, no inline code. */
export const WEB_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'self'",
  // The client writes text nodes only; a script that tried an HTML sink (innerHTML) would be refused.
  "require-trusted-types-for 'script'",
].join('; ');

const DEFAULT_DIST_DIR = fileURLToPath(new URL('../../web/dist/', import.meta.url));

export const NOT_BUILT_DETAIL = 'Web client not built: run npm run build:web.';

const TYPES: Readonly<Record<string, string>> = {
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
};

// Asset names carry a content hash (scripts/build-web.ts), so a name never changes its bytes.
const ASSET_CACHE = 'public, max-age=31536000, immutable';
// The shell names the current assets, so browsers revalidate it every time (cheaply, by ETag).
const SHELL_CACHE = 'no-cache';

interface StaticFile {
  readonly body: Buffer;
  readonly type: string;
  readonly etag: string;
  readonly cacheControl: string;
}

export interface WebClientOptions {
  /** The built client; default web/dist of this checkout. */
  readonly distDir?: string;
}

function staticFile(file: string, type: string, cacheControl: string): StaticFile {
  const body = readFileSync(file);
  const etag = `"${createHash('sha256').update(body).digest('base64url').slice(0, 22)}"`;
  return { body, type, etag, cacheControl };
}

function send(request: FastifyRequest, reply: FastifyReply, file: StaticFile): FastifyReply {
  reply.headers({ 'content-security-policy': WEB_CSP, 'cache-control': file.cacheControl, etag: file.etag });
  const tags = request.headers['if-none-match']?.split(',').map((tag) => tag.trim().replace(/^W\//, ''));
  if (tags?.includes(file.etag) === true) return reply.code(304).send();
  return reply.code(200).type(file.type).send(file.body);
}

interface BuiltClient {
  readonly shell: StaticFile;
  /** By file name under assets/. */
  readonly assets: ReadonlyMap<string, StaticFile>;
}

/** Reads web/dist; null when it is not there (never built, or a rebuild is swapping it right now). */
function readBuiltClient(distDir: string): BuiltClient | null {
  try {
    const shell = staticFile(path.join(distDir, 'index.html'), 'text/html; charset=utf-8', SHELL_CACHE);
    const assets = new Map<string, StaticFile>();
    const assetsDir = path.join(distDir, 'assets');
    for (const name of readdirSync(assetsDir)) {
      const type = TYPES[path.extname(name)];
      if (type !== undefined) assets.set(name, staticFile(path.join(assetsDir, name), type, ASSET_CACHE));
    }
    return { shell, assets };
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw err;
  }
}

/**
 * Serves the built web client from `distDir`. When it has not been built, logs a warning and answers
 * the pages with 503 `{"detail": "Web client not built: run npm run build:web."}`; the API is unaffected.
 */
export function registerWebClient(fastify: FastifyInstance, options: WebClientOptions = {}): void {
  const distDir = options.distDir ?? DEFAULT_DIST_DIR;
  const client = readBuiltClient(distDir);
  if (client === null) {
    fastify.log.warn({ distDir }, 'web client not built: run npm run build:web; until then / answers 503');
  }

  const page = (request: FastifyRequest, reply: FastifyReply) => {
    if (client !== null) return send(request, reply, client.shell);
    reply.headers({ 'content-security-policy': WEB_CSP, 'cache-control': 'no-store' });
    return sendJson(reply, 503, JSON.stringify({ detail: NOT_BUILT_DETAIL }));
  };
  fastify.get('/', page);
  // Same digits as /api/group/{id}; the client shows "not found" for an id the API does not know.
  fastify.get('/group/:id(^\\d+$)', page);
  // contract §9: "Where you're signed in".
  fastify.get('/sessions', page);
  // contract §13: "Find a group" (its search in the query string).
  fastify.get('/groups', page);
  // contract §12: the Passkeys page (the client shows "not found" when passkeys are off).
  fastify.get('/passkeys', page);
  fastify.get('/assets/:name', (request: FastifyRequest<{ Params: { name: string } }>, reply) => {
    const file = client?.assets.get(request.params.name);
    if (file === undefined) throw new ApiError(API_ERRORS.NOT_FOUND);
    return send(request, reply, file);
  });
}
