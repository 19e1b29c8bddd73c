// `npm run demo`: the service on the embedded SQLite default, a private Dovecot holding demo users,
// and sample groups imported through the same path as `clubhouse import`. `npm run demo -- --ldap`
// signs the same users in against a private OpenLDAP directory instead (search, then bind, LDAPS);
// `npm run demo -- --oidc` has them sign in at a private OpenID Provider (oidc-provider, HTTPS with a
// test CA) instead of typing a password here (contract §10). Passkeys are on (contract §12), at
// http://localhost:8000: WebAuthn binds a passkey to a host name, never an IP address, and browsers
// allow plain http for localhost, so a newcomer can create one in their own browser.
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { environmentWithDotenv, loadConfig } from '../src/config/config.ts';
import { applyImport } from '../src/groups/import.ts';
import { createLogger } from '../src/logger.ts';
import { startServer } from '../src/server.ts';
import { openStores } from '../src/store/open.ts';
import { DEMO_USERS, startDovecot } from '../test/helpers/dovecot.ts';
import { startTestProvider } from '../test/helpers/oidc-provider.ts';
import { PEOPLE_DN, SERVICE_DN, SERVICE_PASSWORD, startSlapd } from '../test/helpers/slapd.ts';

const useLdap = process.argv.includes('--ldap');
const useOidc = process.argv.includes('--oidc');

type DemoBackend = { env: Record<string, string>; what: string; stop(): Promise<void> };

const settings = environmentWithDotenv();
/**
 * Where a browser opens the demo: PUBLIC_URL when given, else localhost on the demo's port, with
 * passkeys on (a PUBLIC_URL of your own keeps PASSKEYS at its own setting, `auto` unless set).
 */
const web: Record<string, string> =
  settings['PUBLIC_URL'] === undefined
    ? { PUBLIC_URL: `http://localhost:${settings['PORT'] ?? '8000'}`, PASSKEYS: settings['PASSKEYS'] ?? 'on' }
    : {};
const publicUrl = settings['PUBLIC_URL'] ?? (web['PUBLIC_URL'] as string);

/** contract §10: a private provider knowing the demo users, and clubhouse's AUTH_CONFIG for it. */
async function startProvider(): Promise<DemoBackend> {
  const dir = mkdtempSync(path.join(tmpdir(), 'clubhouse-demo-oidc-'));
  const clientSecret = randomBytes(24).toString('base64url');
  const provider = await startTestProvider({
    accounts: DEMO_USERS.map((user) => ({
      login: user.username,
      password: user.password,
      claims: {
        email: `${user.username}@demo.example`,
        email_verified: true,
        preferred_username: user.username,
      },
    })),
    clients: [
      { clientId: 'clubhouse', clientSecret, redirectUris: [`${publicUrl}/api/auth/oidc/demo/callback`] },
    ],
    certDir: dir,
  });
  const file = path.join(dir, 'auth-config.json');
  writeFileSync(
    file,
    JSON.stringify({
      backends: [
        {
          kind: 'oidc',
          name: 'demo',
          label: 'Sign in with the demo provider',
          issuer: provider.issuer,
          clientId: 'clubhouse',
          clientSecret,
          caFile: provider.caFile,
          // The demo groups name people as alice, bob, carol.
          usernameClaim: 'preferred_username',
        },
      ],
    }),
  );
  return {
    env: { AUTH_CONFIG: file },
    what: `OpenID Connect: a private provider at ${provider.issuer} (its certificate is a test CA's: your browser will warn once)`,
    async stop() {
      await provider.stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** The demo's backend: its settings, a line saying what it is, and how to stop it. */
async function startBackend(): Promise<DemoBackend> {
  if (useOidc) return startProvider();
  if (useLdap) {
    const slapd = await startSlapd(DEMO_USERS);
    return {
      env: {
        AUTH_BACKENDS: 'ldap',
        LDAP_URL: `ldaps://localhost:${slapd.tlsPort}`,
        LDAP_CA_FILE: slapd.caFile,
        LDAP_BIND_DN: SERVICE_DN,
        LDAP_BIND_PASSWORD: SERVICE_PASSWORD,
        LDAP_BASE_DN: PEOPLE_DN,
      },
      what: `LDAP: a private slapd on localhost:${slapd.tlsPort} (LDAPS, search then bind)`,
      stop: () => slapd.stop(),
    };
  }
  const dovecot = await startDovecot({ users: DEMO_USERS });
  return {
    env: {
      IMAP_HOST: 'localhost',
      IMAP_PORT: String(dovecot.tlsPort),
      IMAP_SECURITY: 'tls',
      IMAP_CA_FILE: dovecot.caFile,
    },
    what: `IMAP: a private Dovecot on localhost:${dovecot.tlsPort} (TLS)`,
    stop: () => dovecot.stop(),
  };
}

const backend = await startBackend();
const config = loadConfig({ LOG_LEVEL: 'warn', ...web, ...settings, ...backend.env });

const stores = await openStores(config.store);
const sample: unknown = JSON.parse(readFileSync(new URL('./demo-data.json', import.meta.url), 'utf8'));
const imported = await applyImport(stores, sample, config.usernameCase);
await stores.close();
if (!imported.ok) throw new Error(`demo data did not import: ${JSON.stringify(imported.problems)}`);

const server = await startServer(config, createLogger(config.logLevel));
process.stdout.write(
  [
    '',
    `clubhouse demo is serving at ${publicUrl}/ (listening on ${server.url})`,
    `  database: ${config.databaseUrl}   ${backend.what}`,
    ...(web['PASSKEYS'] === 'on'
      ? [
          `  passkeys are on: sign in, then create one on the Passkeys page (open ${publicUrl}/, not an IP address)`,
        ]
      : []),
    useOidc
      ? '  open it in a browser, press "Sign in with the demo provider" and sign in there as:'
      : '  sign in as:',
    ...DEMO_USERS.map((user) => `    ${user.username.padEnd(6)} / ${user.password}`),
    '',
    ...(useOidc
      ? []
      : [
          `  try: curl -i -c /tmp/jar -H 'content-type: application/json' -d '{"username":"alice","password":"alice-password"}' ${publicUrl}/api/auth/login`,
          `       curl -i -b /tmp/jar ${publicUrl}/api/group/`,
        ]),
    '',
    'Press Ctrl-C to stop.',
    '',
  ].join('\n'),
);

let stopping = false;
const stop = async () => {
  if (stopping) return;
  stopping = true;
  await server.close();
  await backend.stop();
  process.exit(0);
};
process.on('SIGINT', stop);
process.on('SIGTERM', stop);
