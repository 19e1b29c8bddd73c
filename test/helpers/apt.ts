// Installs missing Debian packages on a fresh machine, so the real-server
// tests work on any machine of this kind, not only one set up by hand.
import { execFile } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

// Test files run in parallel processes; dpkg takes its own lock and fails
// rather than waits, so all our apt runs queue behind this file via flock(1).
const LOCK_FILE = '/tmp/clubhouse-apt.lock';

let updated = false;

/**
 * Installs `packageName` with apt-get unless `binaryPath` exists. A `*` in
 * `binaryPath` matches within one segment, for versioned directories.
 */
export async function ensureDebianPackage(binaryPath: string, packageName: string): Promise<void> {
  if (pathExists(binaryPath)) return;
  // The check is repeated under the lock: another test process may have
  // installed the package while we waited for it.
  const script = [
    'for f in $1; do [ -e "$f" ] && exit 0; done',
    updated ? ':' : 'apt-get update',
    'apt-get install -y --no-install-recommends "$2"',
  ].join('\n');
  await run('flock', [LOCK_FILE, 'sh', '-ec', script, 'sh', binaryPath, packageName], {
    env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' },
    maxBuffer: 64 * 1024 * 1024,
  });
  updated = true;
  if (!pathExists(binaryPath)) {
    throw new Error(`installed ${packageName} but ${binaryPath} is still missing`);
  }
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
