// Where errors become answers (contract §1): the error catalog (api-errors.ts) and a store's outage
// (../store/errors.ts, a 503) → {"detail": ...} in one place, Fastify's own 4xx in the contract's
// words, and 404 for every path no route claims. 405 is not decided here: each /api endpoint has a
// route for the methods it refuses (endpoints.ts).
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { StoreUnavailableError } from '../store/errors.ts';
import { API_ERRORS, ApiError, FieldErrors, unavailable, unsupportedMediaType } from './api-errors.ts';
import { sendDetail, sendJson } from './headers.ts';

/** Installs the error handler and the 404 handler. */
export function installErrorHandling(app: FastifyInstance): void {
  app.setNotFoundHandler(() => {
    throw new ApiError(API_ERRORS.NOT_FOUND);
  });
  app.setErrorHandler((error: FastifyError | Error, request, reply) => answerError(error, request, reply));
}

/** The answer to any error thrown on the way to a response. */
function answerError(error: FastifyError | Error, request: FastifyRequest, reply: FastifyReply) {
  if (error instanceof ApiError) return sendDetail(reply, error.status, error.detail, error.headers);
  if (error instanceof FieldErrors) return sendJson(reply, 400, JSON.stringify(error.fields));
  if (error instanceof StoreUnavailableError) {
    request.log.warn({ store: error.store, err: error.cause }, 'store unavailable');
    const answer = unavailable();
    return sendDetail(reply, answer.status, answer.detail, answer.headers);
  }
  const mapped = mapFrameworkError(error as FastifyError, request);
  if (mapped !== null) return sendDetail(reply, mapped.status, mapped.detail, mapped.headers);
  request.log.error({ err: error }, 'unhandled error');
  return sendDetail(reply, 500, API_ERRORS.INTERNAL.detail);
}

/** Fastify's own 4xx errors, in the contract's words; null for anything that is a real fault. */
function mapFrameworkError(error: FastifyError, request: FastifyRequest): ApiError | null {
  switch (error.code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return new ApiError(API_ERRORS.BODY_TOO_LARGE);
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return unsupportedMediaType(request.headers['content-type'] ?? '');
    default:
      break;
  }
  const status = error.statusCode ?? 500;
  if (status >= 400 && status < 500) {
    return new ApiError({
      code: error.code ?? 'BAD_REQUEST',
      status,
      detail: status === 400 ? API_ERRORS.BAD_REQUEST.detail : error.message,
    });
  }
  return null;
}

/**
 * Fastify's `frameworkErrors` (an undecodable URL, a malformed parameter): answered before any hook
 * runs, so `prepare` (the first hook's work: headers, then the Host check) runs here first. Such a
 * path names no resource: 404.
 */
export function frameworkErrorsHandler(
  prepare: (request: FastifyRequest, reply: FastifyReply) => ApiError | null,
) {
  return (_error: FastifyError, request: FastifyRequest, reply: FastifyReply) => {
    const refused = prepare(request, reply);
    if (refused !== null) return sendDetail(reply, refused.status, refused.detail, refused.headers);
    return sendDetail(reply, 404, API_ERRORS.NOT_FOUND.detail);
  };
}
