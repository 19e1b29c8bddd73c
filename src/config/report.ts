// `clubhouse config check`: the effective settings with secrets masked, and what looks risky.

import type { OidcSettings } from '../backends/oidc/settings.ts';
import { removalLimitText } from '../groups/sync/removal-guard.ts';
import { storeTls } from '../store/options.ts';
import type { ConfiguredBackend } from './backends/chain.ts';
import type { Config } from './config.ts';
import { isLoopbackHost } from './error.ts';
import { presentSetting, settingRows } from './settings.ts';

/** One backend as `config check` shows it (contract §8): kind, domains and settings, secrets masked. */
function presentBackend(spec: ConfiguredBackend): Record<string, unknown> {
  const settings: Record<string, unknown> =
    spec.kind === 'imap'
      ? { ...spec.imap }
      : { ...spec.ldap, bindPassword: spec.ldap.bindPassword === null ? null : '***' };
  return { name: spec.name, kind: spec.kind, domains: spec.domains ?? '(every username)', ...settings };
}

/** An identity provider as `config check` shows it (contract §10): its client secret masked. */
function presentProvider(spec: OidcSettings): Record<string, unknown> {
  const { clientAuth, ...rest } = spec;
  const auth =
    clientAuth.method === 'client_secret_basic'
      ? { clientAuth: clientAuth.method, clientSecret: '***' }
      : { clientAuth: clientAuth.method, privateKeyFile: clientAuth.privateKeyFile, keyId: clientAuth.keyId };
  return { kind: 'oidc', ...rest, ...auth, domains: spec.domains ?? '(any)' };
}

/** The group sync as `config check` shows it (contract §11): its directory and account, secrets masked. */
function presentGroupSync(config: Config): Record<string, unknown> | null {
  const sync = config.groupSync;
  if (sync === null) return null;
  const { ldap, ...groups } = sync.directory;
  return {
    backend: sync.backend,
    url: ldap.url,
    bindDn: ldap.bindDn,
    bindPassword: ldap.bindPassword === null ? null : '***',
    userBaseDn: ldap.baseDn,
    ...groups,
    interval: sync.intervalMs === null ? '(off)' : `${sync.intervalMs / 1000} s`,
    maxRemovals: removalLimitText(sync.maxRemovals),
  };
}

/** The settings as an operator would write them, secrets masked, and the warnings about them. */
export function configReport(config: Config): {
  settings: Record<string, string>;
  backends: Record<string, unknown>[];
  groupSync: Record<string, unknown> | null;
  warnings: string[];
} {
  // Every row of the settings table, so that a new setting cannot be missing here.
  const settings: Record<string, string> = {};
  for (const [name] of settingRows()) {
    const file = config.settingFiles[name];
    settings[name] =
      presentSetting(name, config.settings[name]) +
      (file === undefined ? '' : ` (from ${name}_FILE ${file})`);
  }
  // Not settings but what they amount to, so that an operator sees a store reached without verified TLS.
  const tls = storeTls(config.store);
  settings['(database TLS)'] = tls.database;
  settings['(sessions TLS)'] = tls.sessions;
  // contract §12: whether passkeys are on, for which relying party, or why not (PASSKEYS=auto).
  settings['(passkeys)'] = config.passkeys.enabled
    ? `on, relying party ${config.passkeys.rpId}, origins ${config.passkeys.origins.join(' ')}`
    : `off: ${config.passkeys.why}`;
  const warnings: string[] = [];
  if (tls.database === 'not verified') {
    warnings.push(
      "DATABASE_URL sslmode=require: TLS without checking the server's certificate; use sslmode=verify-full with DATABASE_CA_FILE.",
    );
  }
  for (const [store, url] of [
    ['DATABASE_URL', config.databaseUrl],
    ['SESSION_STORE', config.sessionStore],
  ] as const) {
    const host = url === null ? null : networkHost(url);
    const state = store === 'DATABASE_URL' ? tls.database : tls.sessions;
    if (host !== null && state === 'off' && !isLoopbackHost(host))
      warnings.push(`${store} reaches ${host} without TLS: data and passwords cross the network in clear.`);
  }
  const envImap = config.auth.backends.some((spec) => spec.kind === 'imap' && spec.imap === config.imap);
  if (envImap && config.imap.host === null) warnings.push('IMAP_HOST is not set: the server will not start.');
  if (envImap && config.imap.security === 'plain') {
    warnings.push(
      config.imap.host !== null && isLoopbackHost(config.imap.host)
        ? 'IMAP_SECURITY=plain: passwords go to the mail server unencrypted (loopback only).'
        : 'IMAP_SECURITY=plain with IMAP_ALLOW_PLAINTEXT: passwords cross the network unencrypted.',
    );
  }
  const publicListener = !isLoopbackHost(config.host);
  if (!config.http.cookieSecure && config.http.trustProxy !== false) {
    warnings.push(
      'COOKIE_SECURE=false behind a proxy: cookies are Secure only when the proxy sends X-Forwarded-Proto: https; set COOKIE_SECURE=true if clients always use TLS.',
    );
  } else if (!config.http.cookieSecure && publicListener) {
    warnings.push(
      `HOST=${config.host} without TLS in front: session cookies travel in clear. Put a TLS proxy in front and set COOKIE_SECURE=true.`,
    );
  }
  if (publicListener && config.http.trustProxy === false) {
    warnings.push(
      'TRUST_PROXY is off on a public listener: behind a proxy, every client would share the proxy address (throttling, audit log).',
    );
  }
  for (const origin of config.http.trustedOrigins) {
    if (origin.startsWith('http://'))
      warnings.push(`TRUSTED_ORIGINS has ${origin}: a plain-HTTP origin may send credentialed requests.`);
  }
  if (config.http.allowedHosts === null && publicListener) {
    warnings.push(
      `ALLOWED_HOSTS is not set on HOST=${config.host}: any Host header is served, so a page on a rebound DNS name can drive logins from a visitor's browser. List the names clients use.`,
    );
  }
  if (config.metricsPort === null && publicListener) {
    warnings.push('/metrics is served on the public port; set METRICS_PORT to keep it apart.');
  }
  for (const spec of config.auth.backends) {
    const security = spec.kind === 'imap' ? spec.imap.security : spec.ldap.security;
    if (security === 'plain' && !(spec.kind === 'imap' && spec.imap === config.imap)) {
      warnings.push(`Backend ${spec.name}: plain text, passwords travel unencrypted.`);
    }
  }
  // contract §10: the browser comes back to PUBLIC_URL with the code; in clear, anyone on the way has it.
  const publicUrl = config.publicUrl === null ? null : new URL(config.publicUrl);
  if (publicUrl !== null && publicUrl.protocol === 'http:' && !isLoopbackHost(publicUrl.hostname)) {
    warnings.push(
      `PUBLIC_URL=${config.publicUrl} is not https: the provider sends people back with their code in clear.`,
    );
  }
  return {
    settings,
    backends: [...config.auth.backends.map(presentBackend), ...config.auth.providers.map(presentProvider)],
    groupSync: presentGroupSync(config),
    warnings,
  };
}

/** The host of a postgres:// or redis:// URL (the first sentinel of a list); null for SQLite. */
function networkHost(url: string): string | null {
  const match = /^[a-z-]+:\/\/(?:[^@/]*@)?(\[[^\]]+\]|[^:/,?]+)/i.exec(url);
  return url.startsWith('sqlite:') || match === null ? null : match[1]!;
}
