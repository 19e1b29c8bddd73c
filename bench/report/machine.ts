// The lines of the report that say where and how the figures were taken.
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { NODE, type Server } from '../machinery/servers.ts';
import { fixed } from './markdown.ts';

const ROOT = path.join(import.meta.dirname, '..', '..');

function sh(command: string, args: string[]): string {
  try {
    return execFileSync(command, args, {
      cwd: ROOT,
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'ignore'],
    }).trim();
  } catch {
    return '?';
  }
}

/** Machine, versions, date and commit. */
export function machineLines(startedAt: Date, loadBefore: number, seedSeconds: number): string[] {
  const dirty = sh('git', ['status', '--porcelain']) !== '';
  // biome-ignore lint/suspicious/noTemplateCurlyInString: dpkg-query's own format syntax
  const wrkVersion = sh('dpkg-query', ['-W', '-f', '${Version}', 'wrk']);
  const cpuModel = /^model name\s*:\s*(.*)$/m.exec(readFileSync('/proc/cpuinfo', 'utf8'))?.[1] ?? '?';
  return [
    `Machine: ${sh('nproc', [])} CPUs (nproc), ${cpuModel}, ${fixed(os.totalmem() / 1024 ** 3, 1)} GiB RAM`,
    `Node ${sh(NODE, ['--version'])} (node_modules/.bin/node, for clubhouse and the baseline alike), wrk ${wrkVersion}, ` +
      `Dovecot ${sh('/usr/sbin/dovecot', ['--version'])}`,
    `Date ${startedAt.toISOString()}; commit ${sh('git', ['rev-parse', '--short', 'HEAD'])}${dirty ? ' (dirty work tree)' : ''}`,
    `1-minute load average ${fixed(loadBefore, 2)} before, ${fixed(os.loadavg()[0]!, 2)} after; seeding SQLite took ${fixed(seedSeconds, 1)} s`,
  ];
}

/** `label: NAME, NAME=value, …`: a value is shown unless it is a port, a path or a URL. */
export function settingsLine(server: Server): string {
  const shown = Object.entries(server.settings).map(([name, value]) =>
    name.endsWith('PORT') || /[/:]/.test(value) ? `\`${name}\`` : `\`${name}=${value}\``,
  );
  return `${server.label}: ${shown.join(', ')}`;
}
