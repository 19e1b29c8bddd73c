// One IMAP server's settings (contract §5): the IMAP_* rows of the settings table, and the rules they
// obey whether they come from the environment (environment.ts) or an AUTH_CONFIG entry
// (auth-config.ts); the result is the IMAP backend's own option type (backends/imap/settings.ts).
import type { ImapSettings } from '../../backends/imap/settings.ts';
import { existingFile, type Refuse, refusePlaintext } from '../error.ts';
import { boolean, file, integer, oneOf, row, text } from '../settings-parsers.ts';

type ImapSecurity = ImapSettings['security'];

/** IMAP_* rows, in table order. */
export const IMAP_SETTINGS = {
  IMAP_HOST: row(text({ default: undefined, desc: 'the IMAP server that checks passwords' }), {
    unset: '(required to serve)',
  }),
  IMAP_PORT: row(integer(1, 65535)({ default: undefined, desc: 'its port' }), {
    unset: '993 (143 for starttls and plain)',
  }),
  IMAP_SECURITY: row(
    oneOf<ImapSecurity>(['tls', 'starttls', 'plain'])({
      default: 'tls',
      desc: '`tls` (implicit TLS), `starttls` (required, never opportunistic) or `plain`',
    }),
  ),
  IMAP_ALLOW_PLAINTEXT: row(
    boolean({ default: false, desc: 'allow `plain` to a host that is not loopback' }),
  ),
  IMAP_CA_FILE: row(
    file({
      default: undefined,
      desc: 'a PEM CA added to the system roots (certificates are always verified)',
    }),
    { unset: '(system roots only)' },
  ),
  IMAP_TIMEOUT_MS: row(
    integer(
      100,
      120_000,
    )({
      default: 5000,
      desc: 'deadline of one IMAP login: connect, TLS, greeting and authentication',
    }),
  ),
  IMAP_MAX_CONCURRENCY: row(
    integer(1, 1024)({ default: 32, desc: 'IMAP logins at once; more wait in a queue' }),
  ),
  IMAP_QUEUE_LIMIT: row(
    integer(0, 100_000)({ default: 1000, desc: 'logins that may wait; beyond that a login fails at once' }),
  ),
  IMAP_FORWARD_CLIENT_IP: row(
    boolean({
      default: false,
      desc: "send the client's IP in the IMAP `ID` command (`x-originating-ip`); over TLS only (`tls` or `starttls`: it is sent after STARTTLS)",
    }),
  ),
};

/** IMAP settings of one backend; `host` null only from the environment (the CLI runs without it). */
export type ConfiguredImap = Omit<ImapSettings, 'host'> & {
  readonly host: string | null;
  readonly allowPlaintext: boolean;
};

/** The IMAP fields before defaults and cross-checks (from the environment or the file). */
export interface RawImap {
  host?: string;
  port?: number;
  security?: ImapSecurity;
  allowPlaintext?: boolean;
  caFile?: string;
  timeoutMs?: number;
  maxConcurrency?: number;
  queueLimit?: number;
  forwardClientIp?: boolean;
}

/**
 * Defaults and the rules of an IMAP server's settings: the port follows the security, plain text
 * only to loopback unless allowed, the client's address forwarded only inside TLS (contract §5).
 */
export function imapSettings(raw: RawImap, refuse: Refuse): ConfiguredImap {
  const security = raw.security ?? 'tls';
  const host = raw.host ?? null;
  if (security === 'plain' && host !== null) refusePlaintext(host, raw.allowPlaintext, refuse);
  // contract §5: the ID command is sent after STARTTLS too, never in clear.
  if (raw.forwardClientIp === true && security === 'plain') {
    refuse('forwardClientIp', 'needs TLS (tls or starttls): the address travels only inside TLS');
  }
  return {
    host,
    port: raw.port ?? (security === 'tls' ? 993 : 143),
    security,
    allowPlaintext: raw.allowPlaintext ?? false,
    caFile: existingFile(raw.caFile, (message) => refuse('caFile', message)),
    timeoutMs: raw.timeoutMs ?? 5000,
    maxConcurrency: raw.maxConcurrency ?? 32,
    queueLimit: raw.queueLimit ?? 1000,
    forwardClientIp: raw.forwardClientIp ?? false,
  };
}
