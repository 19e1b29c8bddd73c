// Reading the settings (contract §6): the environment over an optional `.env`, each value of the
// settings table (settings.ts) trimmed and parsed by envalid, the first bad one stopping start-up
// with its name; a backend kind's settings read only when that kind is asked (contract §8).
import { existsSync, readFileSync } from 'node:fs';
import { parse as parseDotenv } from 'dotenv';
import { customCleanEnv } from 'envalid';
import { ConfigError } from './error.ts';
import { SETTINGS } from './settings.ts';

export type Env = Readonly<Record<string, string | undefined>>;

/** Reads `.env` (when present) under the real environment: a variable set in the environment wins. */
export function environmentWithDotenv(env: Env = process.env, dotenvPath = '.env'): Env {
  if (!existsSync(dotenvPath)) return env;
  const fromFile = parseDotenv(readFileSync(dotenvPath));
  return { ...fromFile, ...env };
}

/** The settings of the table parsed from `env` (surrounding white space trimmed, empty = unset). */
export function parseSettings(env: Env): CleanedSettings {
  const trimmed: Record<string, string> = {};
  for (const name of Object.keys(SETTINGS)) {
    const value = env[name]?.trim();
    if (value !== undefined && value !== '' && backendSettingRead(name, env)) trimmed[name] = value;
  }
  return customCleanEnv(trimmed, SETTINGS, (cleaned) => cleaned, {
    reporter: ({ errors }) => {
      // The first bad variable in table order, as one line naming it.
      for (const name of Object.keys(SETTINGS)) {
        const error = (errors as Record<string, Error | undefined>)[name];
        if (error !== undefined) throw new ConfigError(name, error.message);
      }
    },
  });
}

/**
 * contract §8: a backend kind's settings are read only when AUTH_BACKENDS lists the kind, and
 * none of them when AUTH_CONFIG describes the backends instead.
 */
function backendSettingRead(name: string, env: Env): boolean {
  const kind = /^(IMAP|LDAP)_/.exec(name)?.[1]?.toLowerCase();
  if (kind === undefined && name !== 'AUTH_BACKENDS') return true;
  if ((env['AUTH_CONFIG']?.trim() ?? '') !== '') return false;
  if (kind === undefined) return true;
  // contract §11: the group sync reads the LDAP_* directory, whoever checks passwords.
  if (kind === 'ldap' && (env['LDAP_GROUP_BASE_DN']?.trim() ?? '') !== '') return true;
  const listed = (env['AUTH_BACKENDS']?.trim() || 'imap').split(',').map((item) => item.trim().toLowerCase());
  return listed.includes(kind);
}

export type CleanedSettings = ReturnType<typeof cleanSettings>;
// Only for its type: what customCleanEnv returns for SETTINGS.
const cleanSettings = (env: Record<string, string>) => customCleanEnv(env, SETTINGS, (cleaned) => cleaned);
