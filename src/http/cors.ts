// CORS (contract §7): off by default; the origins of TRUSTED_ORIGINS get credentialed CORS headers on
// every response, and their preflight OPTIONS is answered.

/** The CORS headers of a request from a trusted origin, or null. */
export function corsHeaders(
  origin: string | undefined,
  trusted: ReadonlySet<string>,
): Record<string, string> | null {
  if (origin === undefined || !trusted.has(origin)) return null;
  return {
    'access-control-allow-origin': origin,
    'access-control-allow-credentials': 'true',
    vary: 'Origin',
  };
}

/** True for a CORS preflight from a trusted origin (an OPTIONS that names the method it wants). */
export function isTrustedPreflight(
  headers: { readonly origin?: string | undefined; readonly 'access-control-request-method'?: string },
  trusted: ReadonlySet<string>,
): boolean {
  return headers['access-control-request-method'] !== undefined && trusted.has(headers.origin ?? '');
}

/** What a trusted preflight is told: the endpoint's methods, the headers a client may send, for 10 min. */
export function preflightHeaders(allow: string): Record<string, string> {
  return {
    'access-control-allow-methods': allow,
    'access-control-allow-headers': 'content-type, x-csrftoken, x-request-id',
    'access-control-max-age': '600',
  };
}
