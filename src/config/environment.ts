// Reading the settings (contract §6): the environment over an optional `.env`, each value of the
// settings table (settings.ts) trimmed and parsed by envalid, the first bad one stopping start-up
// with its name; a backend kind's settings read only when that kind is asked (contract §8). A
// secret setting may instead name a file holding it (`NAME_FILE`), as the official PostgreSQL image
// reads `POSTGRES_PASSWORD_FILE`: compose and Kubernetes secrets arrive as files, and a value kept
// out of the environment is not shown by `podman inspect`, `/proc/PID/environ` or a crash report.
import { existsSync, readFileSync } from 'node:fs';
import { parse as parseDotenv } from 'dotenv';
import { customCleanEnv } from 'envalid';
import { ConfigError, secretFromFile } from './error.ts';
import { SETTINGS, type SettingName, settingRows } from './settings.ts';

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
    if (!backendSettingRead(name, env)) continue;
    const value = settingValue(name as SettingName, env);
    if (value !== undefined) trimmed[name] = value;
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

/** The settings that may be read from a file: the secrets (`config check` masks the same ones). */
export function fileSettingNames(): SettingName[] {
  return settingRows()
    .filter(([, row]) => row.secret !== undefined)
    .map(([name]) => name);
}

/** The files the secret settings of `env` were read from (`DATABASE_URL` → its `DATABASE_URL_FILE`). */
export function settingFiles(env: Env): Partial<Record<SettingName, string>> {
  const files: Partial<Record<SettingName, string>> = {};
  for (const name of fileSettingNames()) {
    const file = env[`${name}_FILE`]?.trim();
    if (file !== undefined && file !== '' && backendSettingRead(name, env)) files[name] = file;
  }
  return files;
}

/**
 * One setting's value, trimmed, or undefined when unset (empty counts as unset). A secret comes from
 * `NAME_FILE` when that is set: both set is a mistake that would hide which one is in force, and an
 * empty or unreadable file stops start-up rather than falling back to a default (an empty
 * `DATABASE_URL_FILE` must not quietly put the service on SQLite).
 */
function settingValue(name: SettingName, env: Env): string | undefined {
  const direct = env[name]?.trim();
  const file = fileSettingNames().includes(name) ? env[`${name}_FILE`]?.trim() : undefined;
  if (file === undefined || file === '') return direct === '' ? undefined : direct;
  const variable = `${name}_FILE`;
  if (direct !== undefined && direct !== '')
    throw new ConfigError(variable, `set ${name} or ${variable}, not both`);
  return secretFromFile(file, (message) => {
    throw new ConfigError(variable, message);
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
