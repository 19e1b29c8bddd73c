// Passkeys (contract §12) in a real browser: headless Chromium with a virtual authenticator of the
// DevTools protocol (CTAP2, internal transport, resident keys, user verification: a phone's or a
// laptop's platform authenticator), against two instances of the real service behind one origin,
// on each store, with a private Dovecot. The person's walk: a password sign-in, the offer, a passkey
// created; signed out; signed in with it by the autofill of the username field (conditional
// mediation) and, in a browser without autofill, by the button; the groups; password sign-in turned
// off, after which the right mail password gets 403; the passkey deleted after a fresh sign-in; and
// the password signs in again. Every ceremony's options are fetched from one instance and verified by
// the other (the origin's proxy sends them so), so a challenge issued on one is taken on the other.
// Screenshots of the new pages go to docs/screenshots/.
import assert from 'node:assert/strict';
import { mkdirSync, readFileSync } from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import type { Browser, BrowserContext, CDPSession, Page } from 'playwright-core';
import { buildWebClient } from '../../scripts/build-web.ts';
import { loadConfig } from '../../src/config/config.ts';
import { applyImport } from '../../src/groups/import.ts';
import { createLogger } from '../../src/logger.ts';
import { type RunningServer, startServer } from '../../src/server.ts';
import { lineSink } from '../helpers/app.ts';
import { launchChromium, watchedPage } from '../helpers/browser.ts';
import { type Dovecot, startDovecot, testUser } from '../helpers/dovecot.ts';
import { freePort } from '../helpers/ports.ts';
import { SQLITE, STORES, type TestStore } from '../helpers/stores.ts';

const SCREENSHOTS = fileURLToPath(new URL('../../docs/screenshots/', import.meta.url));
const DEMO_DATA = fileURLToPath(new URL('../../scripts/demo-data.json', import.meta.url));
const DESKTOP = { width: 1024, height: 720 };
const PHONE = { width: 375, height: 740 };
// Fixed user agents, so the passkey's default name and the session cards read the same everywhere.
const LAPTOP_UA =
  'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36';
const PHONE_UA =
  'Mozilla/5.0 (Linux; Android 15; Pixel 9) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Mobile Safari/537.36';
const TEST_TIMEOUT = { timeout: 600_000 };
const SITE_TIMEOUT = { timeout: 300_000 };

// The page's globals, as far as the functions run in the browser (page.evaluate) use them: the test
// tsconfig has no DOM library.
declare const document: {
  readonly activeElement: { readonly id: string; readonly textContent: string | null } | null;
  readonly documentElement: { readonly scrollWidth: number; readonly clientWidth: number };
  getElementById(id: string): { readonly textContent: string | null } | null;
};
declare const PublicKeyCredential: { isConditionalMediationAvailable?: () => Promise<boolean> };

let dovecot: Dovecot | undefined;
let browser: Browser | undefined;

before(
  async () => {
    await buildWebClient();
    dovecot = await startDovecot();
    browser = await launchChromium();
    mkdirSync(SCREENSHOTS, { recursive: true });
  },
  { timeout: 900_000 },
);

after(async () => {
  await browser?.close();
  await dovecot?.stop();
});

/** One instance of the service and the JSON lines it logged. */
interface Instance {
  readonly server: RunningServer;
  readonly logs: string[];
}

/** The instances' clock: real time plus `skew`, which the walk moves on to age a session. */
const clock = { skew: 0, now: () => Date.now() + clock.skew };
/** contract §12: a sensitive change wants a sign-in within the last 10 minutes; this is past it. */
const PAST_RECENT_MS = 11 * 60 * 1000;

async function startInstance(env: Record<string, string>): Promise<Instance> {
  const config = loadConfig(env);
  const logs: string[] = [];
  const server = await startServer(config, createLogger(config.logLevel, lineSink(logs)), { now: clock.now });
  return { server, logs };
}

/**
 * The one origin browsers see (`http://localhost:PORT`, PUBLIC_URL of both instances): a reverse
 * proxy that sends the ceremonies' verifications (`POST /api/auth/passkeys`, `POST
 * /api/auth/passkeys/login`) to the second instance and everything else, their options included, to
 * the first. `served` counts each instance's requests by "METHOD path".
 */
interface Origin {
  readonly url: string;
  readonly served: readonly [Map<string, number>, Map<string, number>];
  close(): Promise<void>;
}

const VERIFICATIONS = new Set(['POST /api/auth/passkeys', 'POST /api/auth/passkeys/login']);

async function startOrigin(port: number, first: RunningServer, second: RunningServer): Promise<Origin> {
  const served: [Map<string, number>, Map<string, number>] = [new Map(), new Map()];
  const agents = [new http.Agent({ keepAlive: true }), new http.Agent({ keepAlive: true })];
  const proxy = http.createServer((request, response) => {
    const key = `${request.method} ${(request.url ?? '').split('?')[0]}`;
    const which = VERIFICATIONS.has(key) ? 1 : 0;
    served[which].set(key, (served[which].get(key) ?? 0) + 1);
    const target = new URL([first, second][which]?.url ?? '');
    const upstream = http.request(
      {
        host: target.hostname,
        port: target.port,
        method: request.method,
        path: request.url,
        headers: request.headers,
        agent: agents[which],
      },
      (answer) => {
        response.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(response);
      },
    );
    upstream.on('error', () => response.destroy());
    request.pipe(upstream);
  });
  await new Promise<void>((resolve, reject) => {
    proxy.once('error', reject);
    proxy.listen(port, '127.0.0.1', () => resolve());
  });
  return {
    url: `http://localhost:${port}`,
    served,
    async close() {
      proxy.closeAllConnections();
      await new Promise((resolve) => proxy.close(resolve));
      for (const agent of agents) agent.destroy();
    },
  };
}

/** A browser with its own cookies and its own authenticator, recording what goes wrong in its page. */
interface Device {
  readonly context: BrowserContext;
  readonly page: Page;
  readonly cdp: CDPSession;
  readonly authenticatorId: string;
  readonly problems: string[];
}

/**
 * A fresh browser context at `origin` with a virtual platform authenticator (contract §12: resident
 * keys, user verification). `autofill: false` models a browser that offers passkeys only through a
 * button (no conditional mediation), as browsers did before autofill.
 */
async function openDevice(
  origin: Origin,
  options: {
    viewport: typeof DESKTOP;
    userAgent: string;
    autofill: boolean;
  },
): Promise<Device> {
  assert.ok(browser !== undefined, 'browser launched');
  const { context, page, problems } = await watchedPage(browser, {
    viewport: options.viewport,
    userAgent: options.userAgent,
    baseURL: origin.url,
    ...(options.autofill
      ? {}
      : {
          initScript: () => {
            if (typeof PublicKeyCredential !== 'undefined')
              PublicKeyCredential.isConditionalMediationAvailable = () => Promise.resolve(false);
          },
        }),
    warnings: true,
    // Refusals by design: check's 403 when signed out, a refused login's 403.
    expected: ({ status, where }) => status === '403' && where.startsWith(`${origin.url}/api/auth/`),
  });
  const cdp = await context.newCDPSession(page);
  await cdp.send('WebAuthn.enable', { enableUI: false });
  const { authenticatorId } = await cdp.send('WebAuthn.addVirtualAuthenticator', {
    options: {
      protocol: 'ctap2',
      transport: 'internal',
      hasResidentKey: true,
      hasUserVerification: true,
      isUserVerified: true,
      automaticPresenceSimulation: true,
    },
  });
  return { context, page, cdp, authenticatorId, problems };
}

async function credentials(device: Device) {
  const { credentials: found } = await device.cdp.send('WebAuthn.getCredentials', {
    authenticatorId: device.authenticatorId,
  });
  return found;
}

/**
 * A synced passkey: the keychain carries it from one device to the other, its signature counter
 * included (the server refuses a counter that does not move forward, contract §12).
 */
async function syncPasskey(from: Device, to: Device): Promise<void> {
  const [key] = await credentials(from);
  assert.ok(key !== undefined, 'a passkey to carry');
  for (const held of await credentials(to)) {
    await to.cdp.send('WebAuthn.removeCredential', {
      authenticatorId: to.authenticatorId,
      credentialId: held.credentialId,
    });
  }
  await to.cdp.send('WebAuthn.addCredential', { authenticatorId: to.authenticatorId, credential: key });
}

async function expectHeading(page: Page, text: string): Promise<void> {
  await page.getByRole('heading', { level: 1, name: text, exact: true }).waitFor();
}

async function signIn(page: Page, username: string, password: string): Promise<void> {
  await page.getByLabel('Username').fill(username);
  await page.getByLabel('Password').fill(password);
  await page.getByRole('button', { name: 'Sign in', exact: true }).click();
}

async function textOf(page: Page, id: string): Promise<string> {
  await page.waitForFunction((which) => (document.getElementById(which)?.textContent ?? '') !== '', id);
  return (await page.locator(`#${id}`).textContent()) ?? '';
}

/** A screenshot for the README; `fullPage` for a page taller than the window. */
async function screenshot(page: Page, name: string, fullPage = false): Promise<void> {
  await page.mouse.move(0, 0);
  await page.screenshot({ path: path.join(SCREENSHOTS, `${name}.png`), animations: 'disabled', fullPage });
}

async function checkStatus(page: Page): Promise<number> {
  return page.evaluate(async () => (await fetch('/api/auth/check', { credentials: 'same-origin' })).status);
}

/** The caller's sessions as the API lists them: how each signed in, this one marked. */
async function sessionMethods(page: Page): Promise<string[]> {
  return page.evaluate(async () => {
    const response = await fetch('/api/auth/sessions', { credentials: 'same-origin' });
    const sessions = (await response.json()) as { method: string; current: boolean }[];
    return sessions.map((session) => `${session.method}${session.current ? ' (current)' : ''}`);
  });
}

/** The passkey cards of the Passkeys page as "name (badge)". */
async function passkeyCards(page: Page): Promise<string[]> {
  return page
    .locator('.passkey-card')
    .evaluateAll((cards) =>
      cards.map(
        (card) =>
          `${card.querySelector('h3')?.textContent ?? ''} (${card.querySelector('.badge')?.textContent ?? ''})`,
      ),
    );
}

async function horizontalOverflow(page: Page): Promise<number> {
  return page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
}

function serverErrors(instances: readonly Instance[]): string[] {
  return instances.flatMap((instance) =>
    instance.logs.filter((line) => (JSON.parse(line) as { level: number }).level >= 50),
  );
}

/** The service as a browser meets it: a fresh store with the demo data, two instances, one origin. */
interface Site {
  readonly origin: Origin;
  readonly instances: readonly Instance[];
  close(): Promise<void>;
}

async function startSite(store: TestStore, settings: Record<string, string> = {}): Promise<Site> {
  assert.ok(dovecot !== undefined, 'Dovecot started');
  const data = await store.create();
  const port = await freePort();
  const env = {
    ...data.env,
    HOST: '127.0.0.1',
    PORT: '0',
    IMAP_HOST: 'localhost',
    IMAP_PORT: String(dovecot.tlsPort),
    IMAP_SECURITY: 'tls',
    IMAP_CA_FILE: dovecot.caFile,
    // contract §12: the relying party is PUBLIC_URL's host; localhost over http, as browsers allow.
    PUBLIC_URL: `http://localhost:${port}`,
    PASSKEYS: 'on',
    LOG_LEVEL: 'warn',
    ...settings,
  };
  const stores = await data.open();
  try {
    const demo = JSON.parse(readFileSync(DEMO_DATA, 'utf8')) as unknown;
    const outcome = await applyImport(stores, demo, loadConfig(env).usernameCase);
    assert.ok(outcome.ok, JSON.stringify(outcome));
  } finally {
    await stores.close();
  }
  const instances = [await startInstance(env), await startInstance(env)] as const;
  const origin = await startOrigin(port, instances[0].server, instances[1].server);
  return {
    origin,
    instances,
    async close() {
      await origin.close();
      for (const instance of instances) await instance.server.close();
      await data.drop();
    },
  };
}

for (const store of STORES) {
  describe(`web client: passkeys [${store.name}]`, () => {
    let site: Site | undefined;
    before(async () => {
      site = await startSite(store);
    }, SITE_TIMEOUT);
    after(() => site?.close());

    test(
      'create a passkey after a password sign-in, sign in with it (autofill, button), retire the password, delete it, the password again',
      TEST_TIMEOUT,
      async () => {
        assert.ok(site !== undefined, 'site started');
        const { origin, instances } = site;
        const alice = testUser('alice');
        const screenshots = store.kind === 'sqlite';
        const laptop = await openDevice(origin, { viewport: DESKTOP, userAgent: LAPTOP_UA, autofill: true });
        let phone: Device | undefined;
        try {
          const page = laptop.page;
          // 1. The sign-in page offers the passkey: the button, and the username field's autofill.
          await page.goto('/');
          await expectHeading(page, 'Sign in');
          await page.getByRole('button', { name: 'Sign in with a passkey' }).waitFor();
          assert.equal(await page.getByLabel('Username').getAttribute('autocomplete'), 'username webauthn');
          if (screenshots) await screenshot(page, 'login-passkey');

          // 2. A password sign-in; the offer comes above the page; the passkey is made.
          await signIn(page, alice.username, alice.password);
          await expectHeading(page, 'My groups');
          const offer = page.getByRole('region', { name: 'Sign in faster with a passkey' });
          await offer.waitFor();
          if (screenshots) await screenshot(page, 'passkey-offer');
          await offer.getByRole('button', { name: 'Create a passkey' }).click();
          await offer
            .getByRole('status')
            .filter({ hasText: 'Passkey “Chrome on Linux” created. Next time, sign in with it.' })
            .waitFor();
          await offer.getByRole('link', { name: 'Manage your passkeys' }).waitFor();
          const made = await credentials(laptop);
          assert.equal(made.length, 1, 'the authenticator holds one passkey');
          assert.equal(made[0]?.rpId, 'localhost');
          assert.equal(made[0]?.isResidentCredential, true, 'a discoverable credential');

          // 3. The Passkeys page lists it; renamed with the keyboard (Enter saves).
          await page.getByRole('link', { name: 'Passkeys', exact: true }).click();
          await expectHeading(page, 'Passkeys');
          assert.equal(new URL(page.url()).pathname, '/passkeys');
          assert.deepEqual(await passkeyCards(page), ['Chrome on Linux (On one device)']);
          await page.getByRole('button', { name: 'Rename Chrome on Linux' }).press('Enter');
          const newName = page.getByRole('textbox', { name: 'New name for Chrome on Linux' });
          await newName.fill('Laptop');
          await newName.press('Enter');
          assert.equal(await textOf(page, 'passkeys-status'), 'Renamed “Chrome on Linux” to “Laptop”.');
          assert.deepEqual(await passkeyCards(page), ['Laptop (On one device)']);
          const toggle = page.getByRole('switch', { name: 'Sign in with my mail password' });
          assert.equal(await toggle.isChecked(), true);

          // 4. Signed out, then in again by the autofill: the authenticator answers the conditional
          // request at once (a person picks the passkey in the username field's list).
          const autofilled = page.waitForResponse((answer) =>
            answer.url().endsWith('/api/auth/passkeys/login'),
          );
          await page.getByRole('button', { name: 'Sign out' }).click();
          assert.equal((await autofilled).status(), 200);
          await expectHeading(page, 'My groups');
          assert.equal(await page.locator('.who strong').textContent(), 'alice');
          assert.equal((await sessionMethods(page))[0], 'passkey (current)');

          // 5. The groups, as after any sign-in.
          await page.getByRole('link', { name: 'Chess Club' }).click();
          await expectHeading(page, 'Chess Club');
          assert.equal(await page.locator('.membership .badge').textContent(), 'Administrator');

          // 6. Password sign-in turned off (the switch, by keyboard), from this fresh passkey session.
          await page.goto('/passkeys');
          await expectHeading(page, 'Passkeys');
          await toggle.focus();
          await page.keyboard.press('Space');
          assert.equal(
            await textOf(page, 'passkeys-status'),
            'Password sign-in is off: sign in with a passkey from now on.',
          );
          assert.equal(await toggle.isChecked(), false);
          assert.equal(await page.evaluate(() => document.activeElement?.id), 'password-sign-in');
          if (screenshots) await screenshot(page, 'passkeys', true);

          // 7. The same passkey in a second browser (a phone, synced), which has no autofill: the
          // right mail password now gets 403, the button signs in.
          phone = await openDevice(origin, { viewport: PHONE, userAgent: PHONE_UA, autofill: false });
          await syncPasskey(laptop, phone);
          const onPhone = phone.page;
          await onPhone.goto('/');
          await expectHeading(onPhone, 'Sign in');
          const refused = onPhone.waitForResponse((answer) => answer.url().endsWith('/api/auth/login'));
          await signIn(onPhone, alice.username, alice.password);
          const answer = await refused;
          assert.equal(answer.status(), 403, 'the right password, refused');
          assert.deepEqual(await answer.json(), { detail: 'Cannot log you in' });
          assert.equal(
            await textOf(onPhone, 'login-error'),
            'Your username or password was not accepted. Check them and try again.',
          );
          await onPhone.getByRole('button', { name: 'Sign in with a passkey' }).click();
          await expectHeading(onPhone, 'My groups');
          assert.equal((await sessionMethods(onPhone))[0], 'passkey (current)');
          await onPhone.getByRole('link', { name: 'Passkeys', exact: true }).click();
          await expectHeading(onPhone, 'Passkeys');
          assert.equal(await horizontalOverflow(onPhone), 0, 'the Passkeys page at phone width');
          if (screenshots) await screenshot(onPhone, 'phone-passkeys', true);

          // 8. Eleven minutes on, the laptop's session is too old to delete a passkey: the server says
          // so, and the page asks to sign in again; the autofill does, and the address comes back.
          clock.skew += PAST_RECENT_MS;
          await syncPasskey(phone, laptop);
          page.once('dialog', (dialog) => void dialog.accept());
          await page.getByRole('button', { name: 'Delete Laptop' }).click();
          const again = page.getByRole('button', { name: 'Sign in again' });
          await again.waitFor();
          assert.match(await textOf(page, 'passkeys-alert'), /^Sign in again to change your passkeys\. /);
          assert.equal(await page.evaluate(() => document.activeElement?.textContent), 'Sign in again');
          assert.deepEqual(await passkeyCards(page), ['Laptop (On one device)'], 'nothing was deleted');
          if (screenshots) await screenshot(page, 'passkeys-sign-in-again');
          const signedInAgain = page.waitForResponse((answer) =>
            answer.url().endsWith('/api/auth/passkeys/login'),
          );
          await again.click();
          assert.equal((await signedInAgain).status(), 200);
          // The page that asked is gone before the one after the sign-in is looked at.
          await again.waitFor({ state: 'detached' });
          await expectHeading(page, 'Passkeys');
          assert.equal(new URL(page.url()).pathname, '/passkeys');

          // 9. Deleted after that fresh sign-in: the sessions that signed in with it end (the laptop's
          // and the phone's), and password sign-in is back on. The laptop's autofill still holds the
          // deleted passkey: refused, and said so.
          page.once('dialog', (dialog) => void dialog.accept());
          await page.getByRole('button', { name: 'Delete Laptop' }).click();
          await expectHeading(page, 'Sign in');
          assert.equal(
            await page.locator('.notice').textContent(),
            'Deleted “Laptop”. You had signed in with it here, so sign in again.',
          );
          assert.match(await textOf(page, 'login-error'), /^That passkey did not sign you in\./);
          assert.equal(await checkStatus(page), 403);
          assert.equal(await checkStatus(onPhone), 403, 'the phone’s passkey session ended too');

          // 10. The password signs in again; no passkey is left, so the switch is on and locked.
          await onPhone.goto('/passkeys');
          await expectHeading(onPhone, 'Sign in');
          await signIn(onPhone, alice.username, alice.password);
          await expectHeading(onPhone, 'Passkeys');
          assert.deepEqual(await passkeyCards(onPhone), []);
          const phoneToggle = onPhone.getByRole('switch', { name: 'Sign in with my mail password' });
          assert.equal(await phoneToggle.isChecked(), true);
          assert.equal(await phoneToggle.isDisabled(), true);
          assert.equal((await sessionMethods(onPhone))[0], 'password (current)');

          // Every verification went to the second instance, every option to the first.
          const [first, second] = origin.served;
          assert.equal(second.get('POST /api/auth/passkeys'), 1, 'the registration, verified on the second');
          assert.equal(
            second.get('POST /api/auth/passkeys/login'),
            4,
            'four passkey sign-ins, on the second',
          );
          assert.ok((first.get('POST /api/auth/passkeys/registration') ?? 0) >= 1);
          assert.ok((first.get('POST /api/auth/passkeys/authentication') ?? 0) >= 4);
          assert.equal(first.get('POST /api/auth/passkeys/login'), undefined);

          for (const device of [laptop, phone])
            assert.deepEqual(device.problems, [], 'no console or page errors');
          assert.deepEqual(serverErrors(instances), [], 'no server errors');
        } finally {
          await laptop.context.close();
          await phone?.context.close();
        }
      },
    );
  });
}

describe(`web client: the offer, and passkeys off [${SQLITE.name}]`, () => {
  test(
    '"Not now" removes the offer, focus goes to the page, and it is not made again on this browser',
    TEST_TIMEOUT,
    async () => {
      const site = await startSite(SQLITE);
      const laptop = await openDevice(site.origin, {
        viewport: DESKTOP,
        userAgent: LAPTOP_UA,
        autofill: true,
      });
      try {
        const page = laptop.page;
        const bob = testUser('bob');
        const [first] = site.origin.served;
        await page.goto('/');
        await signIn(page, bob.username, bob.password);
        await expectHeading(page, 'My groups');
        const offer = page.getByRole('region', { name: 'Sign in faster with a passkey' });
        await offer.getByRole('button', { name: 'Not now' }).press('Enter');
        await offer.waitFor({ state: 'detached' });
        assert.equal(await page.evaluate(() => document.activeElement?.textContent), 'My groups');
        assert.equal(first.get('GET /api/auth/passkeys'), 1, 'the offer asked whether bob has a passkey');

        await page.getByRole('button', { name: 'Sign out' }).click();
        await expectHeading(page, 'Sign in');
        await signIn(page, bob.username, bob.password);
        await expectHeading(page, 'My groups');
        await page.getByRole('link', { name: 'Chess Club' }).click();
        await expectHeading(page, 'Chess Club');
        assert.equal(first.get('GET /api/auth/passkeys'), 1, 'remembered: not asked, not offered');
        assert.equal(await page.getByRole('region', { name: 'Sign in faster with a passkey' }).count(), 0);
        assert.deepEqual(laptop.problems, [], 'no console or page errors');
        assert.deepEqual(serverErrors(site.instances), [], 'no server errors');
      } finally {
        await laptop.context.close();
        await site.close();
      }
    },
  );

  test(
    'PASSKEYS=off: no button, no autofill, no offer, no Passkeys link; /passkeys is not found',
    TEST_TIMEOUT,
    async () => {
      const site = await startSite(SQLITE, { PASSKEYS: 'off' });
      const laptop = await openDevice(site.origin, {
        viewport: DESKTOP,
        userAgent: LAPTOP_UA,
        autofill: true,
      });
      try {
        const page = laptop.page;
        const carol = testUser('carol');
        await page.goto('/');
        await expectHeading(page, 'Sign in');
        assert.equal(await page.getByLabel('Username').getAttribute('autocomplete'), 'username');
        assert.equal(await page.getByRole('button', { name: 'Sign in with a passkey' }).count(), 0);
        await signIn(page, carol.username, carol.password);
        await expectHeading(page, 'My groups');
        assert.equal(await page.getByRole('link', { name: 'Passkeys', exact: true }).count(), 0);
        await page.goto('/passkeys');
        await expectHeading(page, 'Not found');
        assert.equal(
          await page.locator('.lead').textContent(),
          'Passkeys are not turned on for this service.',
        );
        assert.equal(await page.getByRole('link', { name: 'Passkeys', exact: true }).count(), 0);
        assert.equal(await page.getByRole('region', { name: 'Sign in faster with a passkey' }).count(), 0);
        assert.deepEqual(laptop.problems, [], 'no console or page errors');
        assert.deepEqual(serverErrors(site.instances), [], 'no server errors');
      } finally {
        await laptop.context.close();
        await site.close();
      }
    },
  );
});
