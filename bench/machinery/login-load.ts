// Closed-loop login load with a fixed concurrency, run as its own process by bench/run.ts; prints
// one JSON line (LoginLoadResult). Two modes, for the same Dovecot accounts user000..user099:
//   http URL CONCURRENCY SECONDS          POST /api/auth/login, then /api/auth/logout with the cookie
//   imap HOST PORT CA_FILE CONCURRENCY SECONDS   raw IMAP over TLS: greeting, LOGIN, LOGOUT
//   ldap URL CA_FILE CONCURRENCY SECONDS  raw LDAPS with ldapts: connect, simple bind, unbind
//   passkey URL KEYS_FILE CONCURRENCY SECONDS   POST /api/auth/passkeys/authentication, sign the
//                                         challenge with a software authenticator (keys enrolled
//                                         beforehand: passkey-keys.ts), POST /api/auth/passkeys/login,
//                                         then /api/auth/logout
// The imap and ldap modes are the ceilings of the http one: the least a check can cost here.
// The harness slapd of the LDAP case holds the same user000..user099 accounts.
import { readFileSync } from 'node:fs';
import http from 'node:http';
import tls from 'node:tls';
import { Client } from 'ldapts';
import { TEST_USERS } from '../../test/helpers/dovecot.ts';
import { readLines } from '../../test/helpers/lines.ts';
import { PEOPLE_DN } from '../../test/helpers/slapd.ts';
import { type EnrolledKeys, readEnrolledKeys } from './passkey-keys.ts';

export interface LoginLoadResult {
  readonly mode: 'http' | 'imap' | 'ldap' | 'passkey';
  readonly concurrency: number;
  readonly seconds: number;
  /** Successful logins. */
  readonly logins: number;
  readonly loginsPerSecond: number;
  /**
   * http: the login request to its response (passkey: the options request to the login's response); imap: TCP connect to LOGOUT's OK, a whole session
   * (clubhouse answers once its login is verified, and only flushes LOGOUT without awaiting it). ms.
   */
  readonly loginP50Ms: number;
  readonly loginP99Ms: number;
  /** http: the logout request; imap: TCP connect to LOGIN's OK (the authentication alone). ms. */
  readonly secondaryP50Ms: number;
  /** Failed attempts by status (http) or reason (imap). */
  readonly failures: Record<string, number>;
}

const TIMEOUT_MS = 10_000;
// user000..user099 of the harness Dovecot.
const USERS = TEST_USERS.filter((user) => /^user[0-9]{3}$/.test(user.username));

let nextUser = 0;
/**
 * The next account in turn: with fewer loops than accounts, no two loops log in the same user at
 * once (clubhouse shares one IMAP login between identical concurrent attempts).
 */
function takeUser(): { username: string; password: string } {
  return USERS[nextUser++ % USERS.length]!;
}

function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

function count(failures: Record<string, number>, key: string): void {
  failures[key] = (failures[key] ?? 0) + 1;
}

// ---- http: the service ------------------------------------------------------------------------

function post(agent: http.Agent, url: URL, path: string, body: string, cookie?: string) {
  return new Promise<{ status: number; setCookie: string[] }>((resolve, reject) => {
    // An empty body (logout) goes without a content type: an empty JSON body is a 400.
    const headers: http.OutgoingHttpHeaders = { 'content-length': Buffer.byteLength(body) };
    if (body !== '') headers['content-type'] = 'application/json';
    if (cookie !== undefined) headers['cookie'] = cookie;
    const request = http.request(
      { agent, host: url.hostname, port: url.port, method: 'POST', path, headers, timeout: TIMEOUT_MS },
      (response) => {
        response.resume();
        response.on('end', () =>
          resolve({ status: response.statusCode ?? 0, setCookie: response.headers['set-cookie'] ?? [] }),
        );
        response.on('error', reject);
      },
    );
    request.on('timeout', () => request.destroy(new Error('timeout')));
    request.on('error', reject);
    request.end(body);
  });
}

async function httpLoop(
  url: URL,
  deadline: number,
  logins: number[],
  secondary: number[],
  failures: Record<string, number>,
) {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  while (performance.now() < deadline) {
    const user = takeUser();
    const started = performance.now();
    try {
      const login = await post(agent, url, '/api/auth/login', JSON.stringify(user));
      const loggedIn = performance.now();
      const session = login.setCookie.map((c) => /^sessionid=([^;]*)/.exec(c)?.[1]).find(Boolean);
      if (login.status !== 200 || session === undefined) {
        count(failures, `status ${login.status}`);
        continue;
      }
      logins.push(loggedIn - started);
      const logout = await post(agent, url, '/api/auth/logout', '', `sessionid=${session}`);
      if (logout.status !== 200) count(failures, `logout status ${logout.status}`);
      secondary.push(performance.now() - loggedIn);
    } catch (err) {
      count(failures, err instanceof Error ? err.message : String(err));
    }
  }
  agent.destroy();
}

// ---- passkey: the service, signed in with a passkey ----------------------------------------------

/** A POST with the answer's body (the passkey options are JSON the loop signs). */
function postForBody(agent: http.Agent, url: URL, path: string, body: string, cookie?: string) {
  return new Promise<{ status: number; setCookie: string[]; body: string }>((resolve, reject) => {
    const headers: http.OutgoingHttpHeaders = { 'content-length': Buffer.byteLength(body) };
    if (body !== '') headers['content-type'] = 'application/json';
    if (cookie !== undefined) headers['cookie'] = cookie;
    const request = http.request(
      { agent, host: url.hostname, port: url.port, method: 'POST', path, headers, timeout: TIMEOUT_MS },
      (response) => {
        let text = '';
        response.setEncoding('utf8');
        response.on('data', (chunk) => (text += chunk));
        response.on('end', () =>
          resolve({
            status: response.statusCode ?? 0,
            setCookie: response.headers['set-cookie'] ?? [],
            body: text,
          }),
        );
        response.on('error', reject);
      },
    );
    request.on('timeout', () => request.destroy(new Error('timeout')));
    request.on('error', reject);
    request.end(body);
  });
}

const cookieOf = (setCookie: string[], name: string) =>
  setCookie.map((c) => new RegExp(`^${name}=([^;]*)`).exec(c)?.[1]).find(Boolean);

async function passkeyLoop(
  url: URL,
  keys: EnrolledKeys,
  deadline: number,
  logins: number[],
  secondary: number[],
  failures: Record<string, number>,
) {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  while (performance.now() < deadline) {
    const credential = keys.credentials[nextUser++ % keys.credentials.length]!;
    const started = performance.now();
    try {
      const options = await postForBody(agent, url, '/api/auth/passkeys/authentication', '');
      const challenge = cookieOf(options.setCookie, 'passkey_challenge');
      if (options.status !== 200 || challenge === undefined) {
        count(failures, `options status ${options.status}`);
        continue;
      }
      const assertion = keys.authenticator.get(JSON.parse(options.body), credential);
      const login = await postForBody(
        agent,
        url,
        '/api/auth/passkeys/login',
        JSON.stringify({ credential: assertion }),
        `passkey_challenge=${challenge}`,
      );
      const loggedIn = performance.now();
      const session = cookieOf(login.setCookie, 'sessionid');
      if (login.status !== 200 || session === undefined) {
        count(failures, `status ${login.status}`);
        continue;
      }
      logins.push(loggedIn - started);
      const logout = await post(agent, url, '/api/auth/logout', '', `sessionid=${session}`);
      if (logout.status !== 200) count(failures, `logout status ${logout.status}`);
      secondary.push(performance.now() - loggedIn);
    } catch (err) {
      count(failures, err instanceof Error ? err.message : String(err));
    }
  }
  agent.destroy();
}

// ---- imap: the raw ceiling --------------------------------------------------------------------

/** One connection: TLS, greeting, LOGIN, LOGOUT. Resolves [until LOGOUT's OK, until LOGIN's OK] in ms. */
function imapSession(host: string, port: number, ca: string, user: { username: string; password: string }) {
  return new Promise<[number, number]>((resolve, reject) => {
    const started = performance.now();
    let loggedIn = 0;
    let stage: 'greeting' | 'login' | 'logout' = 'greeting';
    const socket = tls.connect({ host, port, ca, servername: 'localhost' });
    socket.setTimeout(TIMEOUT_MS, () => socket.destroy(new Error('timeout')));
    const fail = (err: Error) => {
      socket.destroy();
      reject(err);
    };
    socket.on('error', fail);
    // Greeting, LOGIN and LOGOUT answers are lines without literals: node's readline.
    readLines(socket, (line) => {
      if (stage === 'greeting' && line.startsWith('* OK')) {
        stage = 'login';
        socket.write(`a LOGIN "${user.username}" "${user.password}"\r\n`);
      } else if (stage === 'login' && line.startsWith('a ')) {
        if (!line.startsWith('a OK')) return fail(new Error(line.slice(0, 60)));
        loggedIn = performance.now();
        stage = 'logout';
        socket.write('b LOGOUT\r\n');
      } else if (stage === 'logout' && line.startsWith('b ')) {
        socket.end();
        resolve([performance.now() - started, loggedIn - started]);
      }
    });
    socket.on('close', () => reject(new Error(`closed during ${stage}`)));
  });
}

async function imapLoop(
  host: string,
  port: number,
  ca: string,
  deadline: number,
  logins: number[],
  secondary: number[],
  failures: Record<string, number>,
) {
  while (performance.now() < deadline) {
    try {
      const [session, authentication] = await imapSession(host, port, ca, takeUser());
      logins.push(session);
      secondary.push(authentication);
    } catch (err) {
      count(failures, err instanceof Error ? err.message : String(err));
    }
  }
}

// ---- ldap: the raw ceiling of the LDAP case ----------------------------------------------------

async function ldapLoop(
  url: string,
  ca: string,
  deadline: number,
  logins: number[],
  secondary: number[],
  failures: Record<string, number>,
) {
  while (performance.now() < deadline) {
    const user = takeUser();
    const started = performance.now();
    const client = new Client({ url, timeout: TIMEOUT_MS, connectTimeout: TIMEOUT_MS, tlsOptions: { ca } });
    try {
      await client.bind(`uid=${user.username},${PEOPLE_DN}`, user.password);
      secondary.push(performance.now() - started);
      await client.unbind();
      logins.push(performance.now() - started);
    } catch (err) {
      await client.unbind().catch(() => undefined);
      count(failures, err instanceof Error ? err.message.split('\n')[0]! : String(err));
    }
  }
}

// ---- main -------------------------------------------------------------------------------------

async function main(): Promise<LoginLoadResult> {
  const [mode, ...args] = process.argv.slice(2);
  const logins: number[] = [];
  const secondary: number[] = [];
  const failures: Record<string, number> = {};
  let concurrency: number;
  let seconds: number;
  const started = performance.now();
  if (mode === 'http') {
    const [url, c, s] = args as [string, string, string];
    concurrency = Number(c);
    seconds = Number(s);
    const deadline = started + seconds * 1000;
    await Promise.all(
      Array.from({ length: concurrency }, () =>
        httpLoop(new URL(url), deadline, logins, secondary, failures),
      ),
    );
  } else if (mode === 'imap') {
    const [host, port, caFile, c, s] = args as [string, string, string, string, string];
    concurrency = Number(c);
    seconds = Number(s);
    const ca = readFileSync(caFile, 'utf8');
    const deadline = started + seconds * 1000;
    await Promise.all(
      Array.from({ length: concurrency }, () =>
        imapLoop(host, Number(port), ca, deadline, logins, secondary, failures),
      ),
    );
  } else if (mode === 'ldap') {
    const [url, caFile, c, s] = args as [string, string, string, string];
    concurrency = Number(c);
    seconds = Number(s);
    const ca = readFileSync(caFile, 'utf8');
    const deadline = started + seconds * 1000;
    await Promise.all(
      Array.from({ length: concurrency }, () => ldapLoop(url, ca, deadline, logins, secondary, failures)),
    );
  } else if (mode === 'passkey') {
    const [url, keysFile, c, s] = args as [string, string, string, string];
    concurrency = Number(c);
    seconds = Number(s);
    const keys = readEnrolledKeys(keysFile);
    const deadline = started + seconds * 1000;
    await Promise.all(
      Array.from({ length: concurrency }, () =>
        passkeyLoop(new URL(url), keys, deadline, logins, secondary, failures),
      ),
    );
  } else {
    throw new Error(
      'usage: login-load.ts http URL CONCURRENCY SECONDS | imap HOST PORT CA CONCURRENCY SECONDS | ldap URL CA CONCURRENCY SECONDS | passkey URL KEYS_FILE CONCURRENCY SECONDS',
    );
  }
  const elapsed = (performance.now() - started) / 1000;
  logins.sort((a, b) => a - b);
  secondary.sort((a, b) => a - b);
  return {
    mode,
    concurrency,
    seconds: elapsed,
    logins: logins.length,
    loginsPerSecond: logins.length / elapsed,
    loginP50Ms: percentile(logins, 50),
    loginP99Ms: percentile(logins, 99),
    secondaryP50Ms: percentile(secondary, 50),
    failures,
  };
}

process.stdout.write(`${JSON.stringify(await main())}\n`);
