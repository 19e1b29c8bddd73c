// deploy/clubhouse.service, proven without a running systemd (this machine has none): systemd's
// own checks of the unit (`systemd-analyze verify` in a root holding the unit and what its
// ExecStart names; `systemd-analyze security --offline`, whose score docs/deploy.md states), the
// directives issue-level promises rest on, and the unit's own command line run the way the unit
// runs it: as a user that is not root, in a fresh state directory as the working directory, with
// the settings of an EnvironmentFile and a secret from a credentials file; it serves a login through
// a real Dovecot, keeps SQLite in the state directory, and exits 0 on SIGTERM.
import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import {
  chmodSync,
  chownSync,
  copyFileSync,
  existsSync,
  linkSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { promisify } from 'node:util';
import { ensureDebianPackage } from '../helpers/apt.ts';
import { DEMO_USERS, type Dovecot, startDovecot } from '../helpers/dovecot.ts';
import { npmStart } from '../helpers/npm-start.ts';
import { freePort } from '../helpers/ports.ts';
import { http, login, waitFor } from './http.ts';

const run = promisify(execFile);
const REPO = path.resolve(import.meta.dirname, '../..');
const UNIT = path.join(REPO, 'deploy/clubhouse.service');
const INSTALL_DIR = '/opt/clubhouse';
/** A uid from systemd's DynamicUser range (61184–65519), as the unit's user would have. */
const DYNAMIC_UID = 61_234;

/** The unit's [Service] settings, each name with its values in order (systemd.syntax(7)). */
function serviceSettings(text: string): Map<string, string[]> {
  const settings = new Map<string, string[]>();
  let section = '';
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    if (line === '' || line.startsWith('#') || line.startsWith(';')) continue;
    const header = /^\[(.+)\]$/.exec(line);
    if (header) {
      section = header[1]!;
      continue;
    }
    if (section !== 'Service') continue;
    const eq = line.indexOf('=');
    const name = line.slice(0, eq);
    settings.set(name, [...(settings.get(name) ?? []), line.slice(eq + 1)]);
  }
  return settings;
}

describe('the systemd unit', { concurrency: false }, () => {
  const unitText = readFileSync(UNIT, 'utf8');
  const settings = serviceSettings(unitText);
  let dir: string;

  before(async () => {
    await ensureDebianPackage('/usr/bin/systemd-analyze', 'systemd');
    dir = mkdtempSync(path.join(tmpdir(), 'clubhouse-systemd-'));
    // The service's user must reach the state and credentials directories below it.
    chmodSync(dir, 0o755);
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  test('systemd-analyze verify finds nothing to say', async () => {
    // A root with systemd's own units, this unit, and the node binary its ExecStart names.
    const root = path.join(dir, 'root');
    mkdirSync(path.join(root, 'usr/lib/systemd'), { recursive: true });
    await run('cp', ['-a', '/usr/lib/systemd/system', path.join(root, 'usr/lib/systemd/')]);
    mkdirSync(path.join(root, 'etc/systemd/system'), { recursive: true });
    copyFileSync(UNIT, path.join(root, 'etc/systemd/system/clubhouse.service'));
    const execStart = settings.get('ExecStart')![0]!.split(' ')[0]!;
    assert.ok(execStart.startsWith(`${INSTALL_DIR}/`), execStart);
    const binary = path.join(root, execStart);
    mkdirSync(path.dirname(binary), { recursive: true });
    const pinned = path.join(REPO, path.relative(INSTALL_DIR, execStart));
    try {
      linkSync(pinned, binary);
    } catch {
      copyFileSync(pinned, binary);
    }
    const verify = await run('systemd-analyze', [
      'verify',
      `--root=${root}`,
      '/etc/systemd/system/clubhouse.service',
    ]);
    assert.equal(`${verify.stdout}${verify.stderr}`, '');

    // And it does speak up, about an unknown setting, say.
    writeFileSync(
      path.join(root, 'etc/systemd/system/clubhouse.service'),
      unitText.replace('NoNewPrivileges=yes', 'NoNewPrivilege=yes'),
    );
    const typo = await run('systemd-analyze', [
      'verify',
      `--root=${root}`,
      '/etc/systemd/system/clubhouse.service',
    ]);
    assert.match(typo.stderr, /Unknown key 'NoNewPrivilege'/);
  });

  test('systemd-analyze security scores it as docs/deploy.md says, and at most 2.0', async (t) => {
    const { stdout } = await run('systemd-analyze', ['security', '--offline=yes', '--no-pager', UNIT]);
    const score = /Overall exposure level for clubhouse\.service: (\d+\.\d)/.exec(stdout)?.[1];
    t.diagnostic(`exposure ${score}`);
    assert.ok(score !== undefined, stdout);
    assert.ok(Number(score) <= 2.0, score);
    assert.match(
      readFileSync(path.join(REPO, 'docs/deploy.md'), 'utf8'),
      new RegExp(`overall exposure ${score.replace('.', '\\.')}`),
    );
  });

  test('holds the promised directives, and no ExecReload', () => {
    assert.deepEqual(settings.get('DynamicUser'), ['yes']);
    assert.deepEqual(settings.get('StateDirectory'), ['clubhouse']);
    assert.deepEqual(settings.get('WorkingDirectory'), ['%S/clubhouse']);
    assert.deepEqual(settings.get('ProtectSystem'), ['strict']);
    assert.deepEqual(settings.get('NoNewPrivileges'), ['yes']);
    assert.deepEqual(settings.get('EnvironmentFile'), ['/etc/clubhouse/clubhouse.env']);
    // npm start's variables (before `exec node`), under the operator's file.
    const { environment, flags } = npmStart();
    const variables = Object.entries(environment).map(([name, value]) => `${name}=${value}`);
    assert.deepEqual(settings.get('Environment'), variables.length === 0 ? undefined : variables);
    assert.deepEqual(settings.get('KillSignal'), ['SIGTERM']);
    assert.equal(settings.get('ExecReload'), undefined);
    // npm start's node flags.
    assert.equal(
      settings.get('ExecStart')![0],
      `${INSTALL_DIR}/node_modules/node/bin/node ${flags.join(' ')} ${INSTALL_DIR}/src/main.ts`,
    );
  });

  describe('its command line, run as the unit runs it', () => {
    let dovecot: Dovecot;
    before(async () => {
      dovecot = await startDovecot({ users: DEMO_USERS });
    });
    after(() => dovecot?.stop());

    test('serves from the state directory as a user that is not root, and stops with 0', async () => {
      // /var/lib/clubhouse: owned by the dynamic user, mode StateDirectoryMode.
      const state = path.join(dir, 'var/lib/clubhouse');
      mkdirSync(path.dirname(state), { recursive: true });
      mkdirSync(state, { mode: 0o700 });
      chownSync(state, DYNAMIC_UID, DYNAMIC_UID);
      // LoadCredential's directory: readable by the service alone.
      const credentials = path.join(dir, 'run/credentials/clubhouse.service');
      mkdirSync(credentials, { recursive: true });
      writeFileSync(path.join(credentials, 'secret_key'), `${'k'.repeat(48)}\n`, { mode: 0o400 });
      chownSync(path.join(credentials, 'secret_key'), DYNAMIC_UID, DYNAMIC_UID);
      const port = await freePort();
      const envFile = [
        '# /etc/clubhouse/clubhouse.env',
        `PORT=${port}`,
        'IMAP_HOST=localhost',
        `IMAP_PORT=${dovecot.tlsPort}`,
        `IMAP_CA_FILE=${dovecot.caFile}`,
        `SECRET_KEY_FILE=${path.join(credentials, 'secret_key')}`,
      ].join('\n');
      const environment = Object.fromEntries(
        envFile
          .split('\n')
          .filter((line) => line !== '' && !line.startsWith('#'))
          .map((line) => [line.slice(0, line.indexOf('=')), line.slice(line.indexOf('=') + 1)]),
      );
      const [command, ...args] = settings
        .get('ExecStart')![0]!
        .split(' ')
        .map((word) => word.replace(INSTALL_DIR, REPO));
      const service = spawn(command!, args, {
        cwd: state,
        uid: DYNAMIC_UID,
        gid: DYNAMIC_UID,
        // systemd's environment for a service: PATH, the credentials directory, the unit's
        // Environment= and then its EnvironmentFile.
        env: {
          PATH: '/usr/local/bin:/usr/bin:/bin',
          CREDENTIALS_DIRECTORY: credentials,
          ...Object.fromEntries((settings.get('Environment') ?? []).map((pair) => pair.split('=', 2))),
          ...environment,
        },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let output = '';
      service.stdout.on('data', (chunk: Buffer) => {
        output += chunk.toString('utf8');
      });
      service.stderr.on('data', (chunk: Buffer) => {
        output += chunk.toString('utf8');
      });
      const exited = new Promise<number | null>((resolve) => service.on('exit', (code) => resolve(code)));
      try {
        await Promise.race([
          waitFor(port, '/readyz', 200, 60_000),
          exited.then((code) => {
            throw new Error(`exited ${code}`);
          }),
        ]).catch((err: unknown) => {
          throw new Error(`${err instanceof Error ? err.message : String(err)}\n${output}`);
        });
        const cookie = await login(port, 'carol', 'carol-password');
        assert.equal((await http(port, 'GET', '/api/auth/check', { cookie })).body, '"carol"');
        // SQLite's file is in the state directory, the default DATABASE_URL being relative to it.
        assert.ok(existsSync(path.join(state, 'data/clubhouse.db')));
      } finally {
        service.kill('SIGTERM');
      }
      assert.equal(await exited, 0, output);
      assert.match(output, /"msg":"stopped"/);
    });
  });
});
