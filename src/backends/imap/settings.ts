// The settings of one IMAP server as the verify-only client takes them (contract §5).

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
