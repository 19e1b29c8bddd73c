// CSRF and cross-origin checks for unsafe requests (contract §7): the algorithm of Go 1.25's
// CrossOriginProtection, then the double-submit token when one is sent.
import { timingSafeEqual } from 'node:crypto';

export type CsrfVerdict = 'ok' | 'origin' | 'token';

export interface CsrfRequest {
  readonly origin: string | undefined;
  readonly secFetchSite: string | undefined;
  readonly host: string | undefined;
  readonly headerToken: string | undefined;
  readonly cookieToken: string | undefined;
}

/** The `host[:port]` of a serialized origin, or null for `null` and anything unparsable. */
function originHost(origin: string): string | null {
  const match = /^[a-z][a-z0-9+.-]*:\/\/([^/?#@]+)$/i.exec(origin);
  return match?.[1]?.toLowerCase() ?? null;
}

/** Decides an unsafe request; `trustedOrigins` are exact origins such as `https://app.example.org`. */
export function checkCsrf(request: CsrfRequest, trustedOrigins: readonly string[]): CsrfVerdict {
  const { origin, secFetchSite, host } = request;
  let allowed: boolean;
  if (origin !== undefined && trustedOrigins.includes(origin)) {
    allowed = true;
  } else if (secFetchSite !== undefined) {
    allowed = secFetchSite === 'same-origin' || secFetchSite === 'none';
  } else if (origin === undefined) {
    // Not a browser (browsers send Origin on every cross-site POST): nothing to forge.
    allowed = true;
  } else {
    const fromOrigin = originHost(origin);
    allowed = fromOrigin !== null && host !== undefined && fromOrigin === host.toLowerCase();
  }
  if (!allowed) return 'origin';
  if (request.headerToken !== undefined && !tokensEqual(request.headerToken, request.cookieToken))
    return 'token';
  return 'ok';
}

function tokensEqual(header: string, cookie: string | undefined): boolean {
  if (cookie === undefined) return false;
  const a = Buffer.from(header);
  const b = Buffer.from(cookie);
  return a.length === b.length && timingSafeEqual(a, b);
}
