// The settings of one IMAP server as the verify-only client takes them (contract §5); config/ parses
// and checks them (config/backends/imap.ts), and nothing in backends/imap/ reads a setting.

/** One IMAP server as the settings describe it (contract §5); TLS options are built apart, once. */
export interface ImapSettings {
  readonly host: string;
  readonly port: number;
  readonly security: 'tls' | 'starttls' | 'plain';
  readonly caFile: string | null;
  readonly timeoutMs: number;
  readonly maxConcurrency: number;
  readonly queueLimit: number;
  readonly forwardClientIp: boolean;
}

/** One IMAP backend to build: its name, the mail domains it serves (null: all) and its server. */
export interface ImapBackendSpec {
  readonly kind: 'imap';
  readonly name: string;
  readonly domains: readonly string[] | null;
  readonly imap: ImapSettings;
}
