// Contract §10 in a real browser: headless Chromium against the real service (real HTTP, SQLite) and
// the real provider (HTTPS through its relay). A person sees one button per provider, reaches it from
// the keyboard, signs in at the provider, comes back signed in to the page they asked for, and signs
// out; a failed sign-in says so once. Screenshots go to docs/screenshots/.
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import type { Browser, Page } from 'playwright-core';
import { buildWebClient } from '../../scripts/build-web.ts';
import { loadConfig } from '../../src/config/config.ts';
import { createLogger } from '../../src/logger.ts';
import { type RunningServer, startServer } from '../../src/server.ts';
import { launchChromium, watchedPage } from '../helpers/browser.ts';
import { type OidcHarness, startOidcHarness } from '../helpers/oidc.ts';
import { freePort } from '../helpers/ports.ts';

const SCREENSHOTS = fileURLToPath(new URL('../../docs/screenshots/', import.meta.url));

declare const document: { readonly activeElement: { readonly textContent: string | null } | null };

let harness: OidcHarness;
let server: RunningServer;
let browser: Browser;
let dir: string;
let base: string;

before(
  async () => {
    await buildWebClient();
    const port = await freePort();
    base = `http://127.0.0.1:${port}`;
    harness = await startOidcHarness(base);
    dir = mkdtempSync(path.join(tmpdir(), 'clubhouse-oidc-web-'));
    const config = loadConfig({
      HOST: '127.0.0.1',
      PORT: String(port),
      DATABASE_URL: `sqlite:${path.join(dir, 'db.sqlite')}`,
      LOG_LEVEL: 'warn',
      ...harness.env,
    });
    server = await startServer(config, createLogger(config.logLevel));
    browser = await launchChromium([
      // The browser trusts exactly the provider's test certificate (clubhouse verifies it by its CA).
      `--ignore-certificate-errors-spki-list=${harness.school.spkiHash}`,
    ]);
    mkdirSync(SCREENSHOTS, { recursive: true });
  },
  { timeout: 900_000 },
);

after(async () => {
  await browser?.close();
  await server?.close();
  await harness?.stop();
  if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
});

async function withPage(body: (page: Page) => Promise<void>): Promise<void> {
  const { context, page, problems } = await watchedPage(browser, {
    viewport: { width: 1024, height: 720 },
    baseURL: base,
    // check's 403 while signed out is a refusal by design; the test provider has no favicon.
    expected: ({ status, where }) =>
      (status === '403' && where.startsWith(`${base}/api/auth/check`)) ||
      (status === '404' && where === `${harness.school.issuer}/favicon.ico`),
  });
  try {
    await body(page);
    assert.deepEqual(problems, [], 'no console errors or page errors');
  } finally {
    await context.close();
  }
}

test('a person signs in at the school’s provider from the keyboard, lands on the page asked for, and signs out', {
  timeout: 300_000,
}, async () => {
  await withPage(async (page) => {
    await page.goto('/sessions');
    await page.getByRole('heading', { level: 1, name: 'Sign in' }).waitFor();
    const buttons = page.getByRole('list', { name: 'Sign in at your organisation' }).getByRole('link');
    assert.deepEqual(await buttons.allTextContents(), ['Sign in with School', 'Sign in with Other']);
    // No password backend in this AUTH_CONFIG: the buttons alone.
    assert.equal(await page.getByLabel('Password').count(), 0);
    // The first button has the focus: Enter follows it.
    assert.equal(
      await page.evaluate(() => document.activeElement?.textContent ?? null),
      'Sign in with School',
    );
    await page.screenshot({ path: path.join(SCREENSHOTS, 'signin-providers.png') });
    await page.keyboard.press('Enter');

    await page.getByRole('heading', { name: 'Test provider' }).waitFor();
    assert.ok(page.url().startsWith(`${harness.school.issuer}/interaction/`));
    await page.getByLabel('Email or username').fill('alice');
    await page.getByLabel('Password').fill('alice-provider-password');
    await page.getByRole('button', { name: 'Sign in' }).click();

    // Back at clubhouse, signed in, on the page first asked for.
    await page.getByRole('heading', { level: 1, name: 'Where you’re signed in' }).waitFor();
    assert.equal(new URL(page.url()).pathname, '/sessions');
    await page.getByText('alice.liddell@school.example').first().waitFor();
    await page.getByRole('button', { name: 'Sign out', exact: true }).click();
    await page.getByText('You have signed out.').waitFor();
  });
});

test('a failed sign-in says so once, as an alert, and leaves the address clean', {
  timeout: 300_000,
}, async () => {
  await withPage(async (page) => {
    await page.goto('/?signin=failed');
    const alert = page.getByRole('alert').filter({ hasText: 'Signing in at your organisation did not work' });
    await alert.waitFor();
    assert.equal(new URL(page.url()).search, '');
    await page.screenshot({ path: path.join(SCREENSHOTS, 'signin-failed.png') });
    await page.reload();
    await page.getByRole('heading', { level: 1, name: 'Sign in' }).waitFor();
    assert.equal(await alert.count(), 0);
  });
});
