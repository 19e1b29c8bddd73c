// ALLOWED_HOSTS (contract §7): against DNS rebinding, a request whose Host header is not
// listed is refused before anything else. Django's semantics (django.http.request.validate_host):
// the port is stripped, the comparison is case-insensitive, a trailing dot is ignored, `.example.org`
// matches the domain and its subdomains, `*` matches everything, IPv6 literals are in brackets.

// Django's host_validation_re: a name or a bracketed IPv6 literal, then an optional port.
const HOST = /^([a-z0-9.-]+|\[[a-f0-9]*:[a-f0-9.:]+\])(:[0-9]+)?$/;

/** The domain part of a Host header, lower-cased, without port or trailing dot; '' when malformed. */
function hostDomain(host: string | undefined): string {
  const match = HOST.exec((host ?? '').toLowerCase());
  const domain = match?.[1] ?? '';
  return domain.endsWith('.') ? domain.slice(0, -1) : domain;
}

/** Django's is_same_domain: `pattern` (lower-cased) names `domain`, or a parent of it when it starts with a dot. */
function matches(domain: string, pattern: string): boolean {
  if (pattern === '*') return true;
  if (pattern.startsWith('.')) return domain.endsWith(pattern) || domain === pattern.slice(1);
  return domain === pattern;
}

/**
 * The verdict on a request's Host for the configured list (null: unset, every Host is served). As in
 * Django's get_host, a missing or malformed Host is allowed by no list, not even `*`.
 */
export function hostAllowed(allowedHosts: readonly string[] | null): (host: string | undefined) => boolean {
  if (allowedHosts === null) return () => true;
  return (host) => {
    const domain = hostDomain(host);
    return domain !== '' && allowedHosts.some((pattern) => matches(domain, pattern));
  };
}

/** RFC 9112 §3.2.2 (absolute-form): a scheme, `//`, the authority, then the path and query. */
const ABSOLUTE_FORM = /^[a-z][a-z0-9+.-]*:\/\/([^/?#]*)(.*)$/is;

/**
 * The host a request is judged by. RFC 9112 §3.2.2: when the request-target is in absolute form
 * (`GET http://club.example.org/api/auth/check HTTP/1.1`), its authority is the host asked and the
 * Host header must be ignored; node and Fastify route such a request by its path and still report
 * the Host header, so a rebound page could name an allowed Host beside another authority. The
 * authority keeps any userinfo, which no list allows (`user@host` is malformed to hostAllowed).
 */
export function requestHost(target: string, host: string | undefined): string | undefined {
  const absolute = ABSOLUTE_FORM.exec(target);
  return absolute === null ? host : absolute[1];
}

/** The path and query of a request-target in origin or absolute form. */
export function targetPath(target: string): string {
  const absolute = ABSOLUTE_FORM.exec(target);
  return absolute === null ? target : absolute[2] || '/';
}

/**
 * RFC 9112 §3.2: a request with more than one Host line gets 400. Node keeps
 * the first and drops the rest, so a proxy that routed by the second and this service would disagree
 * on which site was asked; only the raw header list shows them. Node itself answers 400 to an
 * HTTP/1.1 request without Host (`requireHostHeader`).
 */
export function hasOneHost(rawHeaders: readonly string[]): boolean {
  let seen = 0;
  for (let i = 0; i < rawHeaders.length; i += 2) {
    const name = rawHeaders[i]!;
    if (name.length === 4 && name.toLowerCase() === 'host' && ++seen > 1) return false;
  }
  return true;
}

/**
 * Paths served whatever the Host: the health probes. Orchestrators probe by address (a Kubernetes
 * probe's Host is the pod IP), and these two answer nothing secret and change nothing, so a rebound
 * page gains nothing from them. /metrics, the web client and /api are checked.
 */
export function isProbePath(url: string): boolean {
  const path = targetPath(url).split('?', 1)[0];
  return path === '/healthz' || path === '/readyz';
}
