// What the OIDC suites share (contract §10): the people the test providers know, clubhouse's
// AUTH_CONFIG for them, and a small browser that walks the flow through clubhouse (Fastify inject,
// at PUBLIC_URL) and the provider (real HTTPS through its relay), keeping each origin's cookies as a
// browser does, path included. Every secret it sees (state, nonce, code, cookies) is recorded for
// the secret-grep suite.
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { FastifyInstance } from 'fastify';
import { Agent, fetch } from 'undici';
import type { TestApp } from './app.ts';
import { makeTestCertificates } from './certs.ts';
import { type ProviderAccount, startTestProvider, type TestProvider } from './oidc-provider.ts';
import { recordSecrets } from './secrets.ts';

/** The origin the tests' clubhouse is reached at (requests to it are injected). */
export const PUBLIC_URL = 'http://clubhouse.test';

/** The people of the school's provider: the claims say what each one tests. */
export const SCHOOL_ACCOUNTS: readonly ProviderAccount[] = [
  // Mixed case: the username is the claim canonicalised (contract §3).
  {
    login: 'alice',
    password: 'alice-provider-password',
    claims: { email: 'Alice.Liddell@School.Example', email_verified: true, preferred_username: 'alice' },
  },
  {
    login: 'bob',
    password: 'bob-provider-password',
    claims: { email: 'bob@school.example', email_verified: true },
  },
  // contract §10: an address the provider did not verify is nobody's.
  {
    login: 'eve',
    password: 'eve-provider-password',
    claims: { email: 'eve@school.example', email_verified: false },
  },
  // A verified address of a domain the school's provider is not trusted for.
  {
    login: 'mallory',
    password: 'mallory-provider-password',
    claims: { email: 'mallory@elsewhere.example', email_verified: true },
  },
  {
    login: 'dave',
    password: 'dave-provider-password',
    claims: { email: 'dave@school.example', email_verified: true },
  },
];

export interface OidcHarness {
  readonly school: TestProvider;
  /** A second provider, clubhouse's too: the other side of a mix-up. */
  readonly other: TestProvider;
  /** AUTH_CONFIG listing both (school restricted to school.example) and PUBLIC_URL. */
  readonly env: Record<string, string>;
  /** A provider-side fetch trusting the test CA (a browser's view of the provider). */
  readonly providerFetch: typeof fetch;
  stop(): Promise<void>;
}

/**
 * Starts both providers and writes clubhouse's AUTH_CONFIG for them; `publicUrl` is where clubhouse
 * is reached (the redirect URIs registered at the providers).
 */
export async function startOidcHarness(publicUrl = PUBLIC_URL): Promise<OidcHarness> {
  const dir = mkdtempSync(path.join(tmpdir(), 'clubhouse-oidc-'));
  const certs = await makeTestCertificates(dir);
  const schoolSecret = randomBytes(24).toString('base64url');
  const otherSecret = randomBytes(24).toString('base64url');
  recordSecrets(schoolSecret, otherSecret);
  const redirect = (name: string) => `${publicUrl}/api/auth/oidc/${name}/callback`;
  const school = await startTestProvider({
    accounts: SCHOOL_ACCOUNTS,
    clients: [{ clientId: 'clubhouse', clientSecret: schoolSecret, redirectUris: [redirect('school')] }],
    certDir: dir,
    certs,
  });
  const other = await startTestProvider({
    accounts: SCHOOL_ACCOUNTS,
    clients: [{ clientId: 'clubhouse', clientSecret: otherSecret, redirectUris: [redirect('other')] }],
    certDir: dir,
    certs,
  });
  const file = path.join(dir, 'auth-config.json');
  writeFileSync(
    file,
    JSON.stringify({
      backends: [
        {
          kind: 'oidc',
          name: 'school',
          label: 'Sign in with School',
          issuer: school.issuer,
          clientId: 'clubhouse',
          clientSecret: schoolSecret,
          caFile: certs.caFile,
          domains: ['school.example'],
        },
        {
          kind: 'oidc',
          name: 'other',
          label: 'Sign in with Other',
          issuer: other.issuer,
          clientId: 'clubhouse',
          clientSecret: otherSecret,
          caFile: certs.caFile,
        },
      ],
    }),
  );
  const dispatcher = new Agent({ connect: { ca: certs.caPem } });
  const providerFetch = ((url: Parameters<typeof fetch>[0], init?: Parameters<typeof fetch>[1]) =>
    fetch(url, { ...init, dispatcher })) as typeof fetch;
  return {
    school,
    other,
    env: { AUTH_CONFIG: file, PUBLIC_URL: publicUrl },
    providerFetch,
    async stop() {
      await dispatcher.close();
      await school.stop();
      await other.stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** One answer as the browser saw it. */
export interface Answer {
  readonly url: string;
  readonly status: number;
  /** Absolute, resolved against the request's URL; null without one. */
  readonly location: string | null;
  readonly setCookies: readonly string[];
  readonly body: string;
}

interface Cookie {
  value: string;
  path: string;
}

/** A browser of one person: cookies per host, redirects not followed (each step is asserted). */
export class TestBrowser {
  readonly #app: FastifyInstance;
  readonly #providerFetch: typeof fetch;
  readonly #jar = new Map<string, Map<string, Cookie>>();
  readonly userAgent: string;

  constructor(app: FastifyInstance, providerFetch: typeof fetch, userAgent = 'TestBrowser/1.0') {
    this.#app = app;
    this.#providerFetch = providerFetch;
    this.userAgent = userAgent;
  }

  /** The cookie `name` this browser holds for `origin`'s host, if any. */
  cookie(origin: string, name: string): string | undefined {
    return this.#jar.get(new URL(origin).host)?.get(name)?.value;
  }

  /** Puts a cookie in the jar as a script or an attacker's page could not (a test's own doing). */
  setCookie(origin: string, name: string, value: string, cookiePath = '/'): void {
    const host = new URL(origin).host;
    const jar = this.#jar.get(host) ?? new Map<string, Cookie>();
    jar.set(name, { value, path: cookiePath });
    this.#jar.set(host, jar);
  }

  forget(origin: string, name: string): void {
    this.#jar.get(new URL(origin).host)?.delete(name);
  }

  get(url: string): Promise<Answer> {
    return this.#request('GET', url);
  }

  postForm(url: string, fields: Record<string, string>): Promise<Answer> {
    return this.#request('POST', url, new URLSearchParams(fields).toString());
  }

  #cookieHeader(url: URL): string {
    const jar = this.#jar.get(url.host);
    if (jar === undefined) return '';
    return [...jar]
      .filter(([, cookie]) => url.pathname.startsWith(cookie.path))
      .map(([name, cookie]) => `${name}=${cookie.value}`)
      .join('; ');
  }

  #remember(url: URL, lines: readonly string[]): void {
    const jar = this.#jar.get(url.host) ?? new Map<string, Cookie>();
    this.#jar.set(url.host, jar);
    for (const line of lines) {
      const [pair = '', ...attributes] = line.split(';').map((part) => part.trim());
      const at = pair.indexOf('=');
      const name = pair.slice(0, at);
      const value = pair.slice(at + 1);
      const attribute = (key: string) =>
        attributes.find((a) => a.toLowerCase().startsWith(`${key}=`))?.slice(key.length + 1);
      const maxAge = attribute('max-age');
      if (maxAge !== undefined && Number(maxAge) <= 0) {
        jar.delete(name);
        continue;
      }
      recordSecrets(value);
      jar.set(name, { value, path: attribute('path') ?? '/' });
    }
  }

  async #request(method: 'GET' | 'POST', address: string, form?: string): Promise<Answer> {
    const url = new URL(address);
    const cookie = this.#cookieHeader(url);
    const headers: Record<string, string> = { 'user-agent': this.userAgent };
    if (cookie !== '') headers['cookie'] = cookie;
    if (form !== undefined) headers['content-type'] = 'application/x-www-form-urlencoded';
    let status: number;
    let location: string | undefined;
    let setCookies: string[];
    let body: string;
    if (url.origin === PUBLIC_URL) {
      const response = await this.#app.inject({
        method,
        url: `${url.pathname}${url.search}`,
        headers,
        payload: form,
      });
      status = response.statusCode;
      location = response.headers.location as string | undefined;
      const lines = response.headers['set-cookie'];
      setCookies = lines === undefined ? [] : Array.isArray(lines) ? lines : [lines];
      body = response.body;
    } else {
      const response = await this.#providerFetch(url, { method, headers, body: form, redirect: 'manual' });
      status = response.status;
      location = response.headers.get('location') ?? undefined;
      setCookies = response.headers.getSetCookie();
      body = await response.text();
    }
    this.#remember(url, setCookies);
    return {
      url: url.href,
      status,
      location: location === undefined ? null : new URL(location, url).href,
      setCookies,
      body,
    };
  }
}

/** The steps of one sign-in up to the provider's redirect back (the callback not yet followed). */
export interface ProviderRoundTrip {
  /** clubhouse's answer to start. */
  readonly start: Answer;
  /** The provider's authorization URL, with state, nonce and the PKCE challenge. */
  readonly authorization: URL;
  /** Where the provider sends the browser back: the callback with code, state and iss. */
  readonly callback: URL;
}

/**
 * Start at clubhouse, sign in at the provider with `login`/`password`, and stop at the redirect back
 * (a test follows it, or changes it first). `next` is start's parameter, sent as given.
 */
export async function untilCallback(
  browser: TestBrowser,
  provider: string,
  login: string,
  password: string,
  next?: string,
): Promise<ProviderRoundTrip> {
  const query = next === undefined ? '' : `?next=${encodeURIComponent(next)}`;
  const start = await browser.get(`${PUBLIC_URL}/api/auth/oidc/${provider}/start${query}`);
  if (start.status !== 302 || start.location === null) throw new Error(`start answered ${start.status}`);
  const authorization = new URL(start.location);
  recordSecrets(authorization.searchParams.get('state') ?? '', authorization.searchParams.get('nonce') ?? '');
  const toLogin = await browser.get(authorization.href);
  if (toLogin.location === null) throw new Error(`the provider answered ${toLogin.status}: ${toLogin.body}`);
  // Already signed in at the provider (single sign-on): straight back to clubhouse.
  if (toLogin.location.startsWith(`${PUBLIC_URL}/`)) return back(start, authorization, toLogin.location);
  const form = await browser.get(toLogin.location);
  const action = /action="([^"]+)"/.exec(form.body)?.[1];
  if (action === undefined) throw new Error(`no login form: ${form.status} ${form.body.slice(0, 200)}`);
  const posted = await browser.postForm(new URL(action, form.url).href, { login, password });
  if (posted.location === null)
    throw new Error(`login answered ${posted.status}: ${posted.body.slice(0, 200)}`);
  const resumed = await browser.get(posted.location);
  if (resumed.location === null)
    throw new Error(`resume answered ${resumed.status}: ${resumed.body.slice(0, 200)}`);
  return back(start, authorization, resumed.location);
}

function back(start: Answer, authorization: URL, location: string): ProviderRoundTrip {
  const callback = new URL(location);
  recordSecrets(callback.searchParams.get('code') ?? '', callback.searchParams.get('state') ?? '');
  return { start, authorization, callback };
}

/** The audit lines of sign-ins at a provider, oldest first. */
export function oidcAudits(app: TestApp): Record<string, unknown>[] {
  return app.logs
    .map((line) => JSON.parse(line) as Record<string, unknown>)
    .filter((line) => line['audit'] === 'login' && line['method'] === 'oidc');
}

/** contract §10: a refusal is a redirect to /?signin=failed with the state cookie cleared, no session. */
export function assertRefused(answer: Answer): void {
  assert.equal(answer.status, 302);
  assert.equal(answer.location, `${PUBLIC_URL}/?signin=failed`);
  assert.ok(!answer.setCookies.some((line) => line.startsWith('sessionid=')), 'no session cookie');
  assert.ok(!answer.setCookies.some((line) => line.startsWith('csrftoken=')), 'no CSRF cookie');
  assert.ok(
    answer.setCookies.some((line) => /^oidc_flow=; .*Max-Age=0; Path=\/api\/auth\/oidc\//.test(line)),
    'the state cookie is cleared',
  );
}
