// How a setting is refused (contract §6): the error that stops start-up naming the bad setting, the
// way a rule names a field as the operator wrote it, and the rules every backend's settings share
// (plain text only to loopback unless allowed by name, a file that exists, a secret read from a file).
import { existsSync, readFileSync } from 'node:fs';

export class ConfigError extends Error {
  override readonly name = 'ConfigError';
  readonly variable: string;
  constructor(variable: string, message: string) {
    super(`${variable}: ${message}`);
    this.variable = variable;
  }
}

/** True for names and addresses that cannot leave this machine. */
export function isLoopbackHost(host: string): boolean {
  const bare = host.replace(/^\[|\]$/g, '');
  return bare === 'localhost' || bare === '::1' || /^127(\.[0-9]{1,3}){3}$/.test(bare);
}

/** Throws the ConfigError that names `field` the way the operator wrote it. */
export type Refuse = (field: string, message: string) => never;

/** contract §6, §8: a password in clear over the network is a misconfiguration unless asked for by name. */
export function refusePlaintext(host: string, allowed: boolean | undefined, refuse: Refuse): void {
  if (isLoopbackHost(host) || allowed === true) return;
  refuse(
    'security',
    `plain sends passwords in clear; allowed only to a loopback host unless plain text is allowed explicitly (host "${host}")`,
  );
}

/** The path of a file the settings name, or null; refused when there is no such file. */
export function existingFile(file: string | undefined, refuse: (message: string) => never): string | null {
  if (file === undefined) return null;
  if (!existsSync(file)) refuse(`no such file "${file}"`);
  return file;
}

/**
 * A secret kept in a file of its own (a compose or Kubernetes secret) rather than in AUTH_CONFIG,
 * trimmed as the environment's `NAME_FILE` settings are; empty or unreadable stops start-up.
 */
export function secretFromFile(file: string, refuse: (message: string) => never): string {
  let content: string;
  try {
    content = readFileSync(file, 'utf8');
  } catch (err) {
    return refuse(`cannot read "${file}" (${(err as NodeJS.ErrnoException).code ?? String(err)})`);
  }
  const value = content.trim();
  return value === '' ? refuse(`"${file}" is empty`) : value;
}
