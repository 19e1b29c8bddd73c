// Secrets (docs/reliability.md): runs the suites that log in, log out and fail logins in a child test
// run with a registry of every password, session id and CSRF token they use (and, contract §10, every
// state, nonce, code, token and state cookie of a sign-in at an identity provider, and §12, every
// passkey challenge, challenge cookie, credential id, public key and signature), then greps
// everything that run printed — the runner's output, every captured service log line, every service
// process's output — for each of them. None may appear.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { STORES, storeDescribePattern } from '../helpers/stores.ts';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const SUITES = [
  'login/login',
  'imap/login',
  'imap/faults',
  'imap/hostile',
  'imap/onpath',
  'throttle/limits',
  'api/csrf',
  'login/session-lifecycle',
  'api/groups',
  'cli/commands',
  'ops/endpoints',
  'ops/shutdown',
  'ops/durability',
  'store/outage',
  'api/wire',
  'backends/e2e',
  'ldap/onpath-api',
  // contract §10: the state, nonce, code, tokens and state cookie of every sign-in at a provider.
  'oidc/flow',
  'oidc/refusals',
  'oidc/endpoints',
  // contract §12: every challenge, credential id, public key and signature of the passkey suites.
  'api/passkeys',
].map((name) => join('test', `${name}.test.ts`));
// On SQLite only: the suites that also run on other stores leave those describes out by name.
const OTHER_STORES = storeDescribePattern(STORES.filter((store) => store.kind !== 'sqlite'));

function withoutTestContext(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  const { NODE_TEST_CONTEXT: _, ...rest } = env;
  return rest;
}

test('no password, session id or CSRF token used by the suites appears in any of their output', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'clubhouse-secrets-'));
  const secretsFile = join(dir, 'secrets.txt');
  const dumpFile = join(dir, 'output.txt');
  writeFileSync(secretsFile, '');
  writeFileSync(dumpFile, '');
  try {
    const child = spawn(
      process.execPath,
      [
        '--disable-warning=ExperimentalWarning',
        '--test',
        '--test-concurrency=2',
        `--test-skip-pattern=${OTHER_STORES}`,
        ...SUITES,
      ],
      {
        cwd: ROOT,
        // NODE_TEST_CONTEXT would make the nested runner report to this one instead of running.
        env: {
          ...withoutTestContext(process.env),
          CLUBHOUSE_SECRETS_FILE: secretsFile,
          CLUBHOUSE_LOG_DUMP: dumpFile,
        },
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    let runnerOutput = '';
    child.stdout.on('data', (chunk) => {
      runnerOutput += chunk;
    });
    child.stderr.on('data', (chunk) => {
      runnerOutput += chunk;
    });
    const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
    assert.equal(code, 0, `the suites failed:\n${runnerOutput.slice(-4000)}`);

    const secrets = new Set(
      readFileSync(secretsFile, 'utf8')
        .split('\n')
        .filter((line) => line !== ''),
    );
    const everything = `${runnerOutput}\n${readFileSync(dumpFile, 'utf8')}`;
    assert.ok(secrets.size > 500, `only ${secrets.size} secrets were recorded`);
    assert.ok(everything.length > 100_000, 'the scan has the logs to read');
    assert.ok(everything.includes('"audit":"login"'), 'audit lines were captured');
    const leaked = [...secrets].filter((secret) => everything.includes(secret));
    assert.deepEqual(
      leaked.map((secret) => `${secret.slice(0, 4)}… (${secret.length} characters)`),
      [],
      'secrets found in the output',
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
