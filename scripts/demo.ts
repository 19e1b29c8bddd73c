// `npm run demo`: the service on the embedded SQLite default, a private Dovecot holding demo users,
// and sample groups imported through the same path as `clubhouse import`. `npm run demo -- --ldap`
// signs the same users in against a private OpenLDAP directory instead (search, then bind, LDAPS).
import { readFileSync } from 'node:fs';
import { environmentWithDotenv, loadConfig } from '../src/config/config.ts';
import { applyImport } from '../src/groups/import.ts';
import { createLogger } from '../src/logger.ts';
import { startServer } from '../src/server.ts';
import { openStores } from '../src/store/open.ts';
import { DEMO_USERS, startDovecot } from '../test/helpers/dovecot.ts';
import { PEOPLE_DN, SERVICE_DN, SERVICE_PASSWORD, startSlapd } from '../test/helpers/slapd.ts';

const useLdap = process.argv.includes('--ldap');

/** The demo's backend: its settings, a line saying what it is, and how to stop it. */
async function startBackend(): Promise<{ env: Record<string, string>; what: string; stop(): Promise<void> }> {
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
const config = loadConfig({ LOG_LEVEL: 'warn', ...environmentWithDotenv(), ...backend.env });

const stores = await openStores(config.store);
const sample: unknown = JSON.parse(readFileSync(new URL('./demo-data.json', import.meta.url), 'utf8'));
const imported = await applyImport(stores, sample, config.usernameCase);
await stores.close();
if (!imported.ok) throw new Error(`demo data did not import: ${JSON.stringify(imported.problems)}`);

const server = await startServer(config, createLogger(config.logLevel));
process.stdout.write(
  [
    '',
    `clubhouse demo is serving at ${server.url}/`,
    `  database: ${config.databaseUrl}   ${backend.what}`,
    '  sign in as:',
    ...DEMO_USERS.map((user) => `    ${user.username.padEnd(6)} / ${user.password}`),
    '',
    `  try: curl -i -c /tmp/jar -H 'content-type: application/json' -d '{"username":"alice","password":"alice-password"}' ${server.url}/api/auth/login`,
    `       curl -i -b /tmp/jar ${server.url}/api/group/`,
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
