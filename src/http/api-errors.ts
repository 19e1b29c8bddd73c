// One catalog of the API's errors (contract §1–§3); the HTTP layer turns them into {"detail": ...}.

export interface ApiErrorSpec {
  readonly code: string;
  readonly status: number;
  readonly detail: string;
}

export const API_ERRORS = {
  NOT_FOUND: { code: 'NOT_FOUND', status: 404, detail: 'Not found.' },
  BODY_TOO_LARGE: { code: 'BODY_TOO_LARGE', status: 413, detail: 'Request body too large.' },
  NOT_A_DICTIONARY: { code: 'NOT_A_DICTIONARY', status: 400, detail: 'Invalid data. Expected a dictionary.' },
  LOGIN_FAILED: { code: 'LOGIN_FAILED', status: 403, detail: 'Cannot log you in' },
  NOT_AUTHENTICATED: {
    code: 'NOT_AUTHENTICATED',
    status: 403,
    detail: 'Authentication credentials were not provided.',
  },
  CSRF_ORIGIN: { code: 'CSRF_ORIGIN', status: 403, detail: 'CSRF Failed: Origin checking failed.' },
  CSRF_TOKEN: { code: 'CSRF_TOKEN', status: 403, detail: 'CSRF Failed: CSRF token incorrect.' },
  UNAVAILABLE: { code: 'UNAVAILABLE', status: 503, detail: 'Service temporarily unavailable.' },
  BAD_REQUEST: { code: 'BAD_REQUEST', status: 400, detail: 'Bad request.' },
  // contract §7 (Django's DisallowedHost answer).
  INVALID_HOST: { code: 'INVALID_HOST', status: 400, detail: 'Invalid Host header.' },
  // Answered on the raw socket when the HTTP itself is malformed (http/client-errors.ts).
  REQUEST_TIMEOUT: { code: 'REQUEST_TIMEOUT', status: 408, detail: 'Request timeout.' },
  HEADERS_TOO_LARGE: { code: 'HEADERS_TOO_LARGE', status: 431, detail: 'Request header fields too large.' },
  INTERNAL: { code: 'INTERNAL', status: 500, detail: 'Internal server error.' },
  // contract §12: sensitive changes need a recent sign-in.
  SIGN_IN_AGAIN: { code: 'SIGN_IN_AGAIN', status: 403, detail: 'Sign in again to change your passkeys.' },
  PASSKEY_NOT_VERIFIED: {
    code: 'PASSKEY_NOT_VERIFIED',
    status: 400,
    detail: 'The passkey could not be verified.',
  },
  PASSKEY_EXPIRED: {
    code: 'PASSKEY_EXPIRED',
    status: 400,
    detail: 'The passkey request expired or was already used. Try again.',
  },
  PASSKEY_TAKEN: { code: 'PASSKEY_TAKEN', status: 400, detail: 'This passkey is already registered.' },
  PASSKEY_NAME: {
    code: 'PASSKEY_NAME',
    status: 400,
    detail: 'A passkey name has 1 to 100 characters and no control characters.',
  },
  NO_PASSKEY: {
    code: 'NO_PASSKEY',
    status: 400,
    detail: 'Create a passkey before turning password sign-in off.',
  },
  PASSWORD_POLICY: {
    code: 'PASSWORD_POLICY',
    status: 403,
    detail: 'Your organisation turns password sign-in off once you have a passkey.',
  },
} as const satisfies Record<string, ApiErrorSpec>;

/** The errors whose message names something from the request: DRF's wording, filled in by the builders below. */
export const API_ERROR_TEMPLATES = {
  METHOD_NOT_ALLOWED: {
    code: 'METHOD_NOT_ALLOWED',
    status: 405,
    detail: (method: string) => `Method "${method}" not allowed.`,
  },
  UNSUPPORTED_MEDIA_TYPE: {
    code: 'UNSUPPORTED_MEDIA_TYPE',
    status: 415,
    detail: (contentType: string) => `Unsupported media type "${contentType}" in request.`,
  },
  THROTTLED: {
    code: 'THROTTLED',
    status: 429,
    detail: (seconds: number) => `Request was throttled. Expected available in ${seconds} seconds.`,
  },
  JSON_PARSE: { code: 'JSON_PARSE', status: 400, detail: (reason: string) => `JSON parse error - ${reason}` },
} as const;

/** One entry of the templates, filled in. */
function filled<A>(
  template: { code: string; status: number; detail: (arg: A) => string },
  arg: A,
): ApiErrorSpec {
  return { code: template.code, status: template.status, detail: template.detail(arg) };
}

/** An error the API answers with as `{"detail": ...}`; extra headers go along (Allow, Retry-After). */
export class ApiError extends Error {
  override readonly name = 'ApiError';
  readonly code: string;
  readonly status: number;
  readonly detail: string;
  readonly headers: Readonly<Record<string, string>>;
  constructor(spec: ApiErrorSpec, headers: Record<string, string> = {}) {
    super(spec.detail);
    this.code = spec.code;
    this.status = spec.status;
    this.detail = spec.detail;
    this.headers = headers;
  }
}

/** DRF's 405 message. */
export function methodNotAllowed(method: string, allow: string): ApiError {
  return new ApiError(filled(API_ERROR_TEMPLATES.METHOD_NOT_ALLOWED, method), { allow });
}

/** DRF's 415 message, naming the media type as sent. */
export function unsupportedMediaType(contentType: string): ApiError {
  return new ApiError(filled(API_ERROR_TEMPLATES.UNSUPPORTED_MEDIA_TYPE, contentType));
}

/** DRF's 429 message; N seconds also goes in Retry-After. */
export function throttled(seconds: number): ApiError {
  return new ApiError(filled(API_ERROR_TEMPLATES.THROTTLED, seconds), { 'retry-after': String(seconds) });
}

/** Malformed JSON, with a short reason for the client. */
export function jsonParseError(reason: string): ApiError {
  return new ApiError(filled(API_ERROR_TEMPLATES.JSON_PARSE, reason));
}

/** Field validation errors carry DRF's own body shape, not {"detail": ...}. */
export class FieldErrors extends Error {
  override readonly name = 'FieldErrors';
  readonly fields: Readonly<Record<string, string[]>>;
  constructor(fields: Record<string, string[]>) {
    super('Invalid input.');
    this.fields = fields;
  }
}

/** Seconds a client is told to wait after a 503 (contract §2). */
const UNAVAILABLE_RETRY_AFTER_SECONDS = 5;

/** The 503 answered when a store is unreachable. */
export function unavailable(): ApiError {
  return new ApiError(API_ERRORS.UNAVAILABLE, { 'retry-after': String(UNAVAILABLE_RETRY_AFTER_SECONDS) });
}
