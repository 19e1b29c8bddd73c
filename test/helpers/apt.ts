// Installs missing Debian packages on a fresh machine, so the real-server
// tests work on any machine of this kind, not only one set up by hand.
import { execFile } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

// Test files run in parallel processes: all our apt runs queue behind this file via flock(1), so
// two of ours never meet at the package manager's locks.
const LOCK_FILE = '/tmp/clubhouse-apt.lock';

/**
 * How long an install waits for the package manager's locks when something else holds them (an
 * `apt-get` of the machine's own, unattended-upgrades, another checkout's test run).
 */
const APT_LOCK_WAIT_SECONDS = 600;

/**
 * The apt-get runs, in sh, waiting for locks instead of failing. `DPkg::Lock::Timeout` makes apt wait
 * for dpkg's locks (apt ≥ 1.9.11); apt-get update's lock on the lists directory, and the archives
 * lock of an install, cannot be waited for that way (apt-get exits 100 at once, "Could not get
 * lock"), so a run that fails on a lock alone is tried again each second until the same deadline.
 * Any other failure fails at once, with apt's own message.
 */
const INSTALL_SCRIPT = `
deadline=$(( $(date +%s) + ${APT_LOCK_WAIT_SECONDS} ))
apt() {
  while :; do
    if out=$(apt-get -o DPkg::Lock::Timeout=${APT_LOCK_WAIT_SECONDS} "$@" 2>&1); then return 0; fi
    case "$out" in
      *"Could not get lock"*|*"Unable to lock"*|*"Unable to acquire the dpkg frontend lock"*)
        [ "$(date +%s)" -lt "$deadline" ] && { sleep 1; continue; } ;;
    esac
    printf '%s\n' "$out" >&2
    return 1
  done
}
for f in $1; do [ -e "$f" ] && exit 0; done
[ "$3" = update ] && apt update
apt install -y --no-install-recommends "$2"
`;

let updated = false;

/**
 * Installs `packageName` with apt-get unless `binaryPath` exists. A `*` in
 * `binaryPath` matches within one segment, for versioned directories.
 */
export async function ensureDebianPackage(binaryPath: string, packageName: string): Promise<void> {
  if (pathExists(binaryPath)) return;
  await installDebianPackage(binaryPath, packageName, { update: !updated });
  updated = true;
  if (!pathExists(binaryPath)) {
    throw new Error(`installed ${packageName} but ${binaryPath} is still missing`);
  }
}

/**
 * The install itself, under our lock: the check is repeated there (another test process may have
 * installed the package while we waited), then `apt-get update` (when asked) and `apt-get install`,
 * each waiting for the package manager's locks. `env` is added to the environment (a test points
 * APT_CONFIG at a private apt tree).
 */
export async function installDebianPackage(
  binaryPath: string,
  packageName: string,
  options: { readonly update: boolean; readonly env?: Readonly<Record<string, string>> },
): Promise<void> {
  const args = [binaryPath, packageName, options.update ? 'update' : 'no-update'];
  await run('flock', [LOCK_FILE, 'sh', '-ec', INSTALL_SCRIPT, 'sh', ...args], {
    env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive', ...options.env },
    maxBuffer: 64 * 1024 * 1024,
  });
}

/** True if some path matches `pattern`, where `*` matches within one path segment. */
export function pathExists(pattern: string): boolean {
  return expandPath(pattern).length > 0;
}

/** Expands `*` segment by segment; returns the existing matches, sorted. */
export function expandPath(pattern: string): string[] {
  if (!pattern.includes('*')) return existsSync(pattern) ? [pattern] : [];
  let matches: string[] = [path.sep];
  for (const segment of pattern.split(path.sep).filter(Boolean)) {
    const next: string[] = [];
    for (const dir of matches) {
      if (!segment.includes('*')) {
        const candidate = path.join(dir, segment);
        if (existsSync(candidate)) next.push(candidate);
        continue;
      }
      const regex = new RegExp(`^${segment.split('*').map(escapeRegExp).join('.*')}$`);
      let entries: string[] = [];
      try {
        entries = readdirSync(dir);
      } catch {
        // Not a directory or unreadable: no match below it.
      }
      for (const entry of entries) if (regex.test(entry)) next.push(path.join(dir, entry));
    }
    matches = next;
  }
  return matches.sort();
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}
