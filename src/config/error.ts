// The error that stops start-up naming the bad setting (contract §6), and the loopback rule that
// plain-text backends are held to; shared by the settings and the backends' configuration.

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
