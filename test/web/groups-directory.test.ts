// Contract §13 for a group synced from the directory (§11), in a real browser: the real service on
// SQLite signing people in against a real slapd, whose groups `clubhouse sync groups` brought in.
// The group's administrator (an owner in the directory) sees the requests and members, but changing
// who is a member is the directory's business: the page says so in the server's words, and changes
// nothing; a request can still be refused, and a newcomer can still ask and withdraw.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import { buildWebClient } from '../../scripts/build-web.ts';
import { loadConfig } from '../../src/config/config.ts';
import { createLogger } from '../../src/logger.ts';
import { type RunningServer, startServer } from '../../src/server.ts';
import { launchChromium, watchedPage } from '../helpers/browser.ts';
import { directoryUser, type Slapd, startSlapd } from '../helpers/slapd.ts';
import { runSync, syncDirectoryLdif, syncEnv } from '../helpers/sync-directory.ts';

const MANAGED = "This group's members are managed by the directory.";

declare const document: { readonly activeElement: { readonly textContent: string | null } | null };

let slapd: Slapd | undefined;
let server: RunningServer | undefined;
let browser: Browser | undefined;
let dir: string | undefined;

before(
  async () => {
    await buildWebClient();
    slapd = await startSlapd(undefined, { ldif: syncDirectoryLdif() });
    dir = mkdtempSync(path.join(tmpdir(), 'clubhouse-web-directory-'));
    const env = {
      HOST: '127.0.0.1',
      PORT: '0',
      DATABASE_URL: `sqlite:${path.join(dir, 'db.sqlite')}`,
      AUTH_BACKENDS: 'ldap',
      LOG_LEVEL: 'warn',
      ...syncEnv(slapd),
    };
    const sync = await runSync(env);
    assert.equal(sync.code, 0, [...sync.out, ...sync.err].join('\n'));
    const config = loadConfig(env);
    server = await startServer(config, createLogger(config.logLevel));
    browser = await launchChromium();
  },
  { timeout: 900_000 },
);

after(async () => {
  await browser?.close();
  await server?.close();
  await slapd?.stop();
  if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
});

/**
 * A page signed in as `username`, then `body`; afterwards no page error and no console error but
 * the refusals by design (check's 403 before signing in, the 409s this test provokes).
 */
async function asUser(username: string, body: (page: Page) => Promise<void>): Promise<void> {
  assert.ok(browser !== undefined && server !== undefined);
  const base = server.url;
  const { context, page, problems } = await watchedPage(browser, {
    viewport: { width: 1024, height: 720 },
    baseURL: base,
    expected: ({ status, where }) =>
      (status === '403' && where === `${base}/api/auth/check`) ||
      (status === '409' && where.startsWith(`${base}/api/group/`)),
  });
  try {
    const user = directoryUser(username);
    await page.goto('/groups?q=chess');
    await page.getByLabel('Username').fill(user.username);
    await page.getByLabel('Password').fill(user.password);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('heading', { level: 1, name: 'Find a group' }).waitFor();
    await page.locator('#search-status', { hasText: '1 group found.' }).waitFor();
    await page.getByRole('link', { name: 'Chess Club' }).click();
    await page.getByRole('heading', { level: 1, name: 'Chess Club' }).waitFor();
    await body(page);
    assert.deepEqual(problems, [], 'no console errors or page errors');
  } finally {
    await context.close();
  }
}

async function membership(page: Page): Promise<string> {
  return (await page.locator('.membership .badge').textContent()) ?? '';
}

async function refused(page: Page): Promise<void> {
  await page.locator('#group-status.alert', { hasText: MANAGED }).waitFor();
}

test('a synced group: a newcomer asks; its administrator cannot approve, promote or remove, and is told why', {
  timeout: 300_000,
}, async () => {
  await asUser('uma', async (page) => {
    assert.equal(await membership(page), 'Not a member');
    await page.getByRole('button', { name: 'Ask to join' }).click();
    await page.locator('#group-status', { hasText: 'Your request to join Chess Club was sent.' }).waitFor();
    assert.equal(await membership(page), 'Request pending');
  });
  await asUser('percy', async (page) => {
    await page.getByRole('button', { name: 'Ask to join' }).click();
    await page.locator('#group-status', { hasText: 'Your request to join Chess Club was sent.' }).waitFor();
  });
  // carol owns the directory's Chess Club: its administrator here.
  await asUser('carol', async (page) => {
    assert.equal(await membership(page), 'Administrator');
    await page.getByRole('heading', { name: 'Requests to join (2)' }).waitFor();

    await page.getByRole('button', { name: 'Approve uma' }).click();
    await refused(page);
    assert.equal(
      await page.evaluate(() => document.activeElement?.textContent ?? ''),
      'Approve',
      'focus stays on the refused button',
    );
    await page.getByRole('button', { name: 'Make alice an administrator' }).click();
    await refused(page);
    await page.getByRole('button', { name: 'Remove bob' }).click();
    await page.getByRole('button', { name: 'Remove', exact: true }).click();
    await refused(page);

    // Nothing changed, as a reload shows; a request can still be refused.
    await page.reload();
    await page.getByRole('heading', { name: 'Requests to join (2)' }).waitFor();
    const members = await page
      .getByRole('list', { name: 'Members', exact: true })
      .locator('.member-name')
      .allTextContents();
    assert.deepEqual(members, ['alice', 'bob', 'carol (you)']);
    await page.getByRole('button', { name: 'Refuse percy' }).click();
    await page.locator('#group-status', { hasText: 'You refused percy’s request.' }).waitFor();
    await page.getByRole('heading', { name: 'Requests to join (1)' }).waitFor();
  });
  await asUser('uma', async (page) => {
    assert.equal(
      await membership(page),
      'Request pending',
      'the refused approval left the request as it was',
    );
    await page.getByRole('button', { name: 'Withdraw request' }).click();
    await page.locator('#group-status', { hasText: 'You withdrew your request to join.' }).waitFor();
    assert.equal(await membership(page), 'Not a member');
  });
});
