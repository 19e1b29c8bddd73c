// Proves that the test set-up's package installs (helpers/apt.ts) wait for the package manager's
// locks instead of failing at once, as they did when another apt-get ran on the machine ("Could
// not get lock /var/lib/dpkg/lock-frontend", and the whole run cancelled). The real apt-get runs on
// a private apt tree (APT_CONFIG: its own lists, dpkg status and caches, no sources), so the locks
// held here are that tree's, never the machine's; they are held with fcntl(2), as apt holds them.
import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { copyFile, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { installDebianPackage } from './helpers/apt.ts';

/** Holds an fcntl write lock on a file (as apt and dpkg take theirs) until told to let go. */
const HOLD_LOCK = `
use Fcntl;
open(my $fh, '>>', $ARGV[0]) or die "open: $!";
my $lock = pack('s s x4 q q l x4', F_WRLCK, 0, 0, 0, 0);
fcntl($fh, F_SETLKW, $lock) or die "lock: $!";
$| = 1;
print "held\\n";
<STDIN>;
print "released\\n";
`;

interface Holder {
  /** Lets the lock go; resolves once the holder has exited. */
  release(): Promise<void>;
  readonly released: () => boolean;
}

async function holdLock(file: string): Promise<Holder> {
  const child: ChildProcess = spawn('/usr/bin/perl', ['-e', HOLD_LOCK, file], {
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  let output = '';
  let exited = false;
  const exit = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  void exit.then(() => {
    exited = true;
  });
  await new Promise<void>((resolve, reject) => {
    child.stdout?.on('data', (chunk: Buffer) => {
      output += chunk.toString();
      if (output.includes('held')) resolve();
    });
    child.once('exit', (code) => reject(new Error(`the lock holder exited (${code}) before holding`)));
  });
  return {
    async release() {
      child.stdin?.end('\n');
      await exit;
    },
    released: () => exited,
  };
}

describe('the test set-up installs packages while something else holds the package manager', () => {
  let root: string;
  let env: Record<string, string>;

  before(async () => {
    root = await mkdtemp(path.join(tmpdir(), 'clubhouse-apt-'));
    for (const dir of ['lists/partial', 'dpkg/updates', 'cache/archives/partial', 'sources.list.d'])
      await mkdir(path.join(root, dir), { recursive: true });
    // The machine's installed packages, so that installing one already there is a real no-op run.
    await copyFile('/var/lib/dpkg/status', path.join(root, 'dpkg/status'));
    await writeFile(path.join(root, 'sources.list'), '');
    const config = [
      `Dir::State::Lists "${root}/lists/";`,
      `Dir::State::status "${root}/dpkg/status";`,
      `Dir::Cache "${root}/cache/";`,
      `Dir::Cache::Archives "${root}/cache/archives/";`,
      `Dir::Etc::SourceList "${root}/sources.list";`,
      `Dir::Etc::SourceParts "${root}/sources.list.d/";`,
    ];
    await writeFile(path.join(root, 'apt.conf'), `${config.join('\n')}\n`);
    env = { APT_CONFIG: path.join(root, 'apt.conf') };
  });
  after(async () => {
    await rm(root, { recursive: true, force: true });
  });

  // `coreutils` is installed on every Debian machine: the install finds it the newest and does
  // nothing, after taking every lock a real install takes. A path that never exists makes the
  // helper run apt-get rather than find the package already there.
  const install = (update: boolean) =>
    installDebianPackage(path.join(root, 'never-there'), 'coreutils', { update, env });

  test('apt-get install waits for the dpkg frontend lock, then succeeds', async () => {
    const holder = await holdLock(path.join(root, 'dpkg/lock-frontend'));
    const installing = install(false).then(() => holder.released());
    // Still waiting while the lock is held: let it go a moment later.
    const releasing = new Promise((resolve) => setTimeout(resolve, 1500)).then(() => holder.release());
    try {
      assert.equal(await installing, true, 'the install finished only after the lock was released');
    } finally {
      await releasing;
    }
  });

  test('apt-get update waits for the lists lock, then succeeds', async () => {
    const holder = await holdLock(path.join(root, 'lists/lock'));
    const installing = install(true).then(() => holder.released());
    const releasing = new Promise((resolve) => setTimeout(resolve, 1500)).then(() => holder.release());
    try {
      assert.equal(await installing, true, 'the update finished only after the lock was released');
    } finally {
      await releasing;
    }
  });

  test('a failure that is not a lock fails at once, with apt’s message', async () => {
    await assert.rejects(
      installDebianPackage(path.join(root, 'never-there'), 'no-such-package-clubhouse', {
        update: false,
        env,
      }),
      /Unable to locate package no-such-package-clubhouse/,
    );
  });
});
