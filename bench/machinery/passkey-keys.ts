// The passkeys of the passkey sign-in case (bench/cases/passkey.ts): enrolled once through the API
// (a password sign-in, the creation options, the software authenticator of the tests, POST
// /api/auth/passkeys), then kept in a file the load processes read, so that no round pays for the
// enrolment. Synced passkeys (no signature counter, as platform keychains keep them): any number of
// loops and processes may sign with one at once.
import { createPrivateKey, createPublicKey } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import { SoftAuthenticator, type SoftCredential } from '../../test/helpers/webauthn.ts';

export interface EnrolledKeys {
  readonly authenticator: SoftAuthenticator;
  readonly credentials: readonly SoftCredential[];
}

interface KeyFile {
  readonly origin: string;
  readonly credentials: readonly {
    readonly id: string;
    readonly rpId: string;
    readonly userHandle: string;
    readonly privateKey: string;
  }[];
}

/** One request to the service; the answer's status, cookies and body. */
function request(url: URL, method: string, path: string, body: string, cookie?: string) {
  return new Promise<{ status: number; setCookie: string[]; body: string }>((resolve, reject) => {
    const headers: http.OutgoingHttpHeaders = { 'content-length': Buffer.byteLength(body) };
    if (body !== '') headers['content-type'] = 'application/json';
    if (cookie !== undefined) headers['cookie'] = cookie;
    const req = http.request({ host: url.hostname, port: url.port, method, path, headers }, (response) => {
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
    });
    req.on('error', reject);
    req.end(body);
  });
}

/**
 * Signs each of `users` in with their password and creates one ES256 passkey for them at `url`
 * (whose PUBLIC_URL is `origin`); writes the keys to `file`.
 */
export async function enrollPasskeys(
  url: string,
  origin: string,
  users: readonly { username: string; password: string }[],
  file: string,
): Promise<void> {
  const base = new URL(url);
  const authenticator = new SoftAuthenticator(origin, { synced: true });
  const credentials: KeyFile['credentials'][number][] = [];
  for (const user of users) {
    const login = await request(base, 'POST', '/api/auth/login', JSON.stringify(user));
    const cookie = login.setCookie.map((c) => c.split(';')[0]).join('; ');
    if (login.status !== 200) throw new Error(`password login of ${user.username}: ${login.status}`);
    const options = await request(base, 'POST', '/api/auth/passkeys/registration', '', cookie);
    if (options.status !== 200) throw new Error(`registration options: ${options.status} ${options.body}`);
    const { response, credential } = authenticator.create(JSON.parse(options.body));
    const stored = await request(
      base,
      'POST',
      '/api/auth/passkeys',
      JSON.stringify({ credential: response, name: 'bench' }),
      cookie,
    );
    if (stored.status !== 201)
      throw new Error(`passkey of ${user.username}: ${stored.status} ${stored.body}`);
    await request(base, 'POST', '/api/auth/logout', '', cookie);
    credentials.push({
      id: credential.id.toString('base64url'),
      rpId: credential.rpId,
      userHandle: credential.userHandle.toString('base64url'),
      privateKey: credential.privateKey.export({ format: 'pem', type: 'pkcs8' }).toString(),
    });
  }
  writeFileSync(file, JSON.stringify({ origin, credentials } satisfies KeyFile));
}

/** The keys `enrollPasskeys` wrote, ready to sign. */
export function readEnrolledKeys(file: string): EnrolledKeys {
  const keys = JSON.parse(readFileSync(file, 'utf8')) as KeyFile;
  return {
    authenticator: new SoftAuthenticator(keys.origin, { synced: true }),
    credentials: keys.credentials.map((c) => {
      const privateKey = createPrivateKey(c.privateKey);
      return {
        id: Buffer.from(c.id, 'base64url'),
        algorithm: 'ES256',
        privateKey,
        publicKey: createPublicKey(privateKey),
        rpId: c.rpId,
        userHandle: Buffer.from(c.userHandle, 'base64url'),
        counter: null,
      };
    }),
  };
}
