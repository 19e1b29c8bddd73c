// Passkeys (contract §12): PASSKEYS, PASSKEY_ORIGINS and PASSKEYS_RETIRE_PASSWORD, their rows of the
// settings table and how they resolve against PUBLIC_URL. The relying party id is PUBLIC_URL's host,
// which WebAuthn requires to be a domain name (an IP address cannot be one); `localhost` is a name.
import { isIP } from 'node:net';
import { ConfigError } from './error.ts';
import { boolean, oneOf, origins, row } from './settings-parsers.ts';

export type PasskeysSetting = 'auto' | 'on' | 'off';

/** The PASSKEYS rows, in table order. */
export const PASSKEY_SETTINGS = {
  PASSKEYS: row(
    oneOf<PasskeysSetting>(['auto', 'on', 'off'])({
      default: 'auto',
      desc: 'sign-in with passkeys (WebAuthn, contract §12): `auto` is on when `PUBLIC_URL` is set and its host is a domain name (the relying party id), else off; `on` requires that; `off`: the passkey endpoints answer 404 (docs/passkeys.md)',
    }),
  ),
  PASSKEY_ORIGINS: row(
    origins({
      default: [],
      desc: "comma-separated origins accepted in a passkey's signature besides `PUBLIC_URL`'s (another name of the same site under the relying party id)",
    }),
    { unset: '(PUBLIC_URL only)' },
  ),
  PASSKEYS_RETIRE_PASSWORD: row(
    boolean({
      default: false,
      desc: "organisation policy: a user's first passkey turns their password sign-in off, and they cannot turn it back on (`clubhouse passkeys reset` can)",
    }),
  ),
};

/** What the passkey endpoints are configured with; null `rpId` never: off is `enabled: false`. */
export type PasskeyConfig =
  | {
      readonly enabled: true;
      /** The relying party id: PUBLIC_URL's host. */
      readonly rpId: string;
      /** PUBLIC_URL's origin, then PASSKEY_ORIGINS. */
      readonly origins: readonly string[];
      readonly retirePassword: boolean;
    }
  | { readonly enabled: false; readonly why: string };

/** Why `publicUrl` cannot name a relying party, or null when it can. */
function unusable(publicUrl: string | null): string | null {
  if (publicUrl === null) return 'PUBLIC_URL is not set (the relying party id is its host)';
  const host = new URL(publicUrl).hostname;
  if (isIP(host.replace(/^\[|\]$/g, '')) !== 0)
    return `PUBLIC_URL's host ${host} is an IP address, which WebAuthn does not allow as a relying party id`;
  return null;
}

/** Resolves the settings; throws ConfigError naming PUBLIC_URL when PASSKEYS=on cannot be. */
export function passkeyConfig(
  setting: PasskeysSetting,
  publicUrl: string | null,
  extraOrigins: readonly string[],
  retirePassword: boolean,
): PasskeyConfig {
  if (setting === 'off') return { enabled: false, why: 'PASSKEYS=off' };
  const problem = unusable(publicUrl);
  if (problem !== null) {
    if (setting === 'on') throw new ConfigError('PUBLIC_URL', `required by PASSKEYS=on: ${problem}`);
    return { enabled: false, why: `PASSKEYS=auto: ${problem}` };
  }
  const url = new URL(publicUrl as string);
  return {
    enabled: true,
    rpId: url.hostname,
    origins: [url.origin, ...extraOrigins.filter((origin) => origin !== url.origin)],
    retirePassword,
  };
}
