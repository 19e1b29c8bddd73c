// `npm run demo`: the service on the embedded SQLite default, a private Dovecot holding demo users,
// and sample groups imported through the same path as `clubhouse import`.
import { readFileSync } from 'node:fs';
import { environmentWithDotenv, loadConfig } from '../src/config.ts';
import { applyImport } from '../src/import.ts';
import { createLogger } from '../src/logger.ts';
import { startServer } from '../src/server.ts';
import { openStores } from '../src/store/open.ts';
import { DEMO_USERS, startDovecot } from '../test/helpers/dovecot.ts';

const dovecot = await startDovecot({ users: DEMO_USERS });
const config = loadConfig({
  LOG_LEVEL: 'warn',
  ...environmentWithDotenv(),
  IMAP_HOST: 'localhost',
  IMAP_PORT: String(dovecot.tlsPort),
  IMAP_SECURITY: 'tls',
  IMAP_CA_FILE: dovecot.caFile,
});

const stores = await openStores(config);
const sample: unknown = JSON.parse(readFileSync(new URL('./demo-data.json', import.meta.url), 'utf8'));
const imported = await applyImport(stores, sample, config.usernameCase);
await stores.close();
if (!imported.ok) throw new Error(`demo data did not import: ${JSON.stringify(imported.problems)}`);

const server = await startServer(config, createLogger(config.logLevel));
process.stdout.write(
  [
    '',
    `clubhouse demo is serving at ${server.url}/`,
    `  database: ${config.databaseUrl}   IMAP: a private Dovecot on localhost:${dovecot.tlsPort} (TLS)`,
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
  await dovecot.stop();
  process.exit(0);
};
process.on('SIGINT', stop);
process.on('SIGTERM', stop);
