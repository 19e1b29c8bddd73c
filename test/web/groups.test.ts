// Contract §13 in a real browser: headless Chromium against the real service (real HTTP, SQLite, a
// private Dovecot over TLS). A person finds a group, asks to join, an administrator in a second
// browser approves, the newcomer sees the group in "My groups" after a reload and leaves it; an
// administrator refuses, promotes, demotes and removes, edits the group's texts, and is told in
// words when the server refuses (the last administrator); the search filters by type, ignores case
// and accents and pages as the API pages; all of it from the keyboard and at phone width.
// Screenshots of the new pages go to docs/screenshots/.
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import type { Browser, Page } from 'playwright-core';
import { buildWebClient } from '../../scripts/build-web.ts';
import { loadConfig } from '../../src/config/config.ts';
import { applyImport } from '../../src/groups/import.ts';
import { WEB_CSP } from '../../src/http/web.ts';
import { createLogger } from '../../src/logger.ts';
import { type RunningServer, startServer } from '../../src/server.ts';
import { openStores } from '../../src/store/open.ts';
import { lineSink } from '../helpers/app.ts';
import { launchChromium, watchedPage } from '../helpers/browser.ts';
import { type Dovecot, startDovecot, testUser } from '../helpers/dovecot.ts';

const SCREENSHOTS = fileURLToPath(new URL('../../docs/screenshots/', import.meta.url));
const DEMO_DATA = fileURLToPath(new URL('../../scripts/demo-data.json', import.meta.url));
const DESKTOP = { width: 1024, height: 720 };
const PHONE = { width: 375, height: 740 };
const TEST_TIMEOUT = { timeout: 300_000 };
// More workshops than one page holds (contract §13: 50 a page), half of them classrooms.
const WORKSHOPS = 60;

// The page's globals, as far as the functions run in the browser use them (no DOM library here).
declare const document: {
  readonly activeElement: {
    readonly id: string;
    readonly textContent: string | null;
    getAttribute(name: string): string | null;
  } | null;
  readonly documentElement: { readonly scrollWidth: number; readonly clientWidth: number };
};

/** The groups of this file besides the demo's: each test works on its own, so their order is free. */
const EXTRA = {
  groups: [
    {
      id: 10,
      name: 'Orchestra',
      description: 'Symphonic repertoire for strings, winds and brass.',
      short_description: 'Play an orchestral instrument.',
      activities: 'Rehearsals on Wednesdays.',
      type: 0,
    },
    {
      id: 11,
      name: 'Café Théâtre',
      description: 'Improvisation and short plays over coffee.',
      short_description: 'Stage fright welcome.',
      activities: 'Fridays at the café.',
      type: 0,
    },
    {
      id: 13,
      name: 'Film Club',
      description: 'A film a week, and a talk after it.',
      short_description: 'Come to one screening first.',
      activities: 'Screenings on Thursdays.',
      type: 0,
    },
    {
      id: 12,
      name: 'Robotics',
      description: 'Build and program small robots.',
      short_description: '',
      activities: 'Saturdays in the lab.',
      type: 0,
    },
    ...Array.from({ length: WORKSHOPS }, (_, i) => ({
      id: 100 + i,
      name: `Workshop ${String(i + 1).padStart(2, '0')}`,
      description: 'One of many workshops.',
      short_description: 'Sign up at the front desk.',
      activities: '',
      type: i % 2,
    })),
  ],
  users: [],
  memberships: [
    { group: 10, username: 'alice', status: 2 },
    { group: 10, username: 'bob', status: 1 },
    { group: 10, username: 'uma', status: 0 },
    { group: 12, username: 'quinn', status: 2 },
    { group: 13, username: 'alice', status: 2 },
    { group: 12, username: 'percy', status: 1 },
  ],
};

let dovecot: Dovecot | undefined;
let server: RunningServer | undefined;
let browser: Browser | undefined;
let dir: string | undefined;
/** The service's log lines (JSON), so a test can tell that no request ended in a server error. */
const serverLogs: string[] = [];

before(
  async () => {
    await buildWebClient();
    dovecot = await startDovecot();
    dir = mkdtempSync(path.join(tmpdir(), 'clubhouse-web-groups-'));
    const config = loadConfig({
      HOST: '127.0.0.1',
      PORT: '0',
      DATABASE_URL: `sqlite:${path.join(dir, 'db.sqlite')}`,
      IMAP_HOST: 'localhost',
      IMAP_PORT: String(dovecot.tlsPort),
      IMAP_SECURITY: 'tls',
      IMAP_CA_FILE: dovecot.caFile,
      LOG_LEVEL: 'warn',
    });
    const stores = await openStores(config.store);
    try {
      const demo = JSON.parse(readFileSync(DEMO_DATA, 'utf8')) as unknown;
      for (const data of [demo, EXTRA]) {
        const outcome = await applyImport(stores, data, config.usernameCase);
        assert.ok(outcome.ok, JSON.stringify(outcome));
      }
    } finally {
      await stores.close();
    }
    server = await startServer(config, createLogger(config.logLevel, lineSink(serverLogs)));
    browser = await launchChromium();
    mkdirSync(SCREENSHOTS, { recursive: true });
  },
  { timeout: 900_000 },
);

after(async () => {
  await browser?.close();
  await server?.close();
  await dovecot?.stop();
  if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
});

function baseUrl(): string {
  assert.ok(server !== undefined, 'server started');
  return server.url;
}

interface Tab {
  readonly page: Page;
  /** Console errors and page errors seen so far. */
  readonly problems: string[];
  close(): Promise<void>;
}

/**
 * A fresh browser context signed in as `username`. The only console errors allowed are Chromium's
 * "Failed to load resource" lines for refusals by design: check's 403 before signing in, and the
 * refusals of §13 the tests provoke and the page then says in words (409 for the last
 * administrator, 403 for an administrator demoted meanwhile).
 */
async function signedIn(username: string, viewport = DESKTOP, start = '/'): Promise<Tab> {
  assert.ok(browser !== undefined, 'browser launched');
  const base = baseUrl();
  const { context, page, problems } = await watchedPage(browser, {
    viewport,
    baseURL: base,
    warnings: true,
    expected: ({ status, where }) =>
      (status === '403' && where === `${base}/api/auth/check`) ||
      ((status === '409' || status === '403') && where.startsWith(`${base}/api/group/`)),
  });
  const user = testUser(username);
  await page.goto(start);
  await page.getByLabel('Username').fill(user.username);
  await page.getByLabel('Password').fill(user.password);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.locator('.who').waitFor();
  return { page, problems, close: () => context.close() };
}

/** Runs `body` with signed-in tabs, then checks that no page and no request went wrong. */
async function withTabs(tabs: Tab[], body: () => Promise<void>): Promise<void> {
  try {
    await body();
    for (const tab of tabs) assert.deepEqual(tab.problems, [], 'no console errors or page errors');
    const errors = serverLogs.filter((line) => (JSON.parse(line) as { level: number }).level >= 50);
    assert.deepEqual(errors, [], 'no server errors');
  } finally {
    for (const tab of tabs) await tab.close();
  }
}

async function expectHeading(page: Page, text: string): Promise<void> {
  await page.getByRole('heading', { level: 1, name: text, exact: true }).waitFor();
}

/** The viewport, or with `fullPage` the whole page (an administrator's page is long). */
async function screenshot(page: Page, name: string, fullPage = false): Promise<void> {
  await page.mouse.move(0, 0);
  await page.screenshot({ path: path.join(SCREENSHOTS, `${name}.png`), animations: 'disabled', fullPage });
}

async function membership(page: Page): Promise<string> {
  return (await page.locator('.membership .badge').textContent()) ?? '';
}

/** Waits until the page's live region says `text`. */
async function said(page: Page, text: string): Promise<void> {
  await page.locator('#group-status', { hasText: text }).waitFor();
}

/** Waits for the search's count line to say `text` (and the list to be answered). */
async function searchSays(page: Page, text: string): Promise<void> {
  await page.locator('#search-status', { hasText: text }).waitFor();
  await page.locator('.group-list:not([aria-busy])').waitFor({ state: 'attached' });
}

async function resultNames(page: Page): Promise<string[]> {
  return page.locator('.group-list .group-name').allTextContents();
}

async function myGroups(page: Page): Promise<string[]> {
  await page.goto('/');
  await expectHeading(page, 'My groups');
  await page.locator('.group-list, .empty').first().waitFor();
  return page.locator('.group-card h2').allTextContents();
}

/** "name: badge" for every row of a members list (requests or members), as shown. */
async function rows(page: Page, list: 'Requests to join' | 'Members'): Promise<string[]> {
  const rowList = page.getByRole('list', { name: list, exact: true });
  await rowList.waitFor();
  const items = rowList.locator('.member-row');
  return items.evaluateAll((elements) =>
    elements.map(
      (row) =>
        `${row.querySelector('.member-name')?.textContent ?? ''}: ${row.querySelector('.badge')?.textContent ?? ''}`,
    ),
  );
}

async function focusedText(page: Page): Promise<string> {
  return page.evaluate(() => document.activeElement?.textContent ?? '');
}

async function horizontalOverflow(page: Page): Promise<number> {
  return page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
}

describe('web client: joining and running a group (contract §13)', () => {
  test('/groups serves the app shell with the CSP, like every page of the client', async () => {
    for (const pathname of ['/groups', '/groups/']) {
      const response = await fetch(`${baseUrl()}${pathname}?q=chess&type=0`);
      assert.equal(response.status, 200, pathname);
      assert.equal(response.headers.get('content-type'), 'text/html; charset=utf-8');
      assert.equal(response.headers.get('content-security-policy'), WEB_CSP);
      assert.match(
        await response.text(),
        /<script type="module" src="\/assets\/app-[A-Z0-9]+\.js"><\/script>/,
      );
    }
  });

  test(
    'find a group, ask to join, an administrator approves in another browser, it is in My groups after a reload; leave',
    TEST_TIMEOUT,
    async () => {
      const dave = await signedIn('dave');
      const alice = await signedIn('alice');
      await withTabs([dave, alice], async () => {
        const page = dave.page;
        await expectHeading(page, 'My groups');
        assert.equal(
          await page.locator('.empty-title').textContent(),
          'You are not a member of any group yet.',
        );
        await page.getByRole('link', { name: 'Find a group', exact: true }).click();
        await expectHeading(page, 'Find a group');
        assert.equal(new URL(page.url()).pathname, '/groups');

        await page.getByLabel('Search').fill('chess');
        await searchSays(page, '1 group found.');
        assert.deepEqual(await resultNames(page), ['Chess Club']);
        assert.equal(new URL(page.url()).search, '?q=chess', 'the address keeps the search');
        assert.match(
          (await page.locator('.group-card').textContent()) ?? '',
          /To join: Know how the pieces move\./,
        );
        await screenshot(page, 'find-groups');

        await page.getByRole('link', { name: 'Chess Club' }).click();
        await expectHeading(page, 'Chess Club');
        assert.equal(await membership(page), 'Not a member');
        assert.equal(
          await page.locator('.membership-card').getByText('To join:').textContent(),
          'To join: Know how the pieces move.',
          'the requirement is shown beside the button',
        );
        await screenshot(page, 'group-join');
        await page.getByRole('button', { name: 'Ask to join' }).click();
        await said(page, 'Your request to join Chess Club was sent. An administrator will decide.');
        assert.equal(await membership(page), 'Request pending');
        assert.equal(await focusedText(page), 'Withdraw request', 'focus is on the next step');
        // Asked once: the server counts it once however often the page is reloaded.
        await page.reload();
        await expectHeading(page, 'Chess Club');
        assert.equal(await membership(page), 'Request pending');
        assert.deepEqual(await myGroups(page), [], 'a request is not a membership');

        // The administrator, in her own browser, sees the request (and the demo's from carol).
        const admin = alice.page;
        await admin.goto('/group/1');
        await expectHeading(admin, 'Chess Club');
        assert.equal(await membership(admin), 'Administrator');
        await admin.getByRole('heading', { name: 'Requests to join (2)' }).waitFor();
        assert.deepEqual(await rows(admin, 'Requests to join'), [
          'carol: Request pending',
          'dave: Request pending',
        ]);
        assert.deepEqual(await rows(admin, 'Members'), ['alice (you): Administrator', 'bob: Member']);
        await screenshot(admin, 'group-admin', true);
        await admin.getByRole('button', { name: 'Approve dave' }).click();
        await said(admin, 'dave is now a member of Chess Club.');
        await admin.getByRole('heading', { name: 'Requests to join (1)' }).waitFor();
        assert.deepEqual(await rows(admin, 'Requests to join'), ['carol: Request pending']);
        assert.deepEqual(await rows(admin, 'Members'), [
          'alice (you): Administrator',
          'bob: Member',
          'dave: Member',
        ]);
        assert.equal(await focusedText(admin), 'Requests to join (1)', 'focus stays with the requests');

        // The newcomer's page still shows the old state until it asks again: a reload does.
        await page.goto('/');
        await expectHeading(page, 'My groups');
        await page.reload();
        await expectHeading(page, 'My groups');
        assert.deepEqual(await page.locator('.group-card h2').allTextContents(), ['Chess Club']);

        await page.getByRole('link', { name: 'Chess Club' }).click();
        await expectHeading(page, 'Chess Club');
        assert.equal(await membership(page), 'Member');
        await page.getByRole('button', { name: 'Leave group' }).click();
        assert.equal(await focusedText(page), 'Cancel', 'the safe answer is focused');
        await page.getByRole('button', { name: 'Cancel' }).click();
        assert.equal(await focusedText(page), 'Leave group', 'Cancel puts focus back');
        await page.getByRole('button', { name: 'Leave group' }).click();
        await page.getByRole('button', { name: 'Leave', exact: true }).click();
        await said(page, 'You left Chess Club.');
        assert.equal(await membership(page), 'Not a member');
        assert.deepEqual(await myGroups(page), []);

        await admin.reload();
        await expectHeading(admin, 'Chess Club');
        await admin.getByRole('heading', { name: 'Members (2)' }).waitFor();
        assert.deepEqual(await rows(admin, 'Members'), ['alice (you): Administrator', 'bob: Member']);
      });
    },
  );

  test(
    'a request can be withdrawn; it is then gone from the administrator’s list',
    TEST_TIMEOUT,
    async () => {
      const percy = await signedIn('percy', DESKTOP, '/group/13');
      const alice = await signedIn('alice', DESKTOP, '/group/13');
      await withTabs([percy, alice], async () => {
        await expectHeading(percy.page, 'Film Club');
        await percy.page.getByRole('button', { name: 'Ask to join' }).click();
        await said(percy.page, 'Your request to join Film Club was sent.');
        await expectHeading(alice.page, 'Film Club');
        await alice.page.getByRole('heading', { name: 'Requests to join (0)' }).waitFor();
        await alice.page.reload();
        await alice.page.getByRole('heading', { name: 'Requests to join (1)' }).waitFor();
        assert.deepEqual(await rows(alice.page, 'Requests to join'), ['percy: Request pending']);

        await percy.page.getByRole('button', { name: 'Withdraw request' }).click();
        await said(percy.page, 'You withdrew your request to join.');
        assert.equal(await membership(percy.page), 'Not a member');
        assert.equal(await focusedText(percy.page), 'Ask to join');

        await alice.page.reload();
        await alice.page.getByRole('heading', { name: 'Requests to join (0)' }).waitFor();
        assert.equal(await alice.page.getByText('No one is waiting to join.').count(), 1);
      });
    },
  );

  test(
    'an administrator refuses, promotes, demotes and removes; the last administrator is told why she cannot leave',
    TEST_TIMEOUT,
    async () => {
      const alice = await signedIn('alice', DESKTOP, '/group/10');
      const bob = await signedIn('bob', DESKTOP, '/group/10');
      await withTabs([alice, bob], async () => {
        const page = alice.page;
        await expectHeading(page, 'Orchestra');
        await page.getByRole('heading', { name: /^Members \(\d+\)$/ }).waitFor();
        assert.deepEqual(await rows(page, 'Members'), ['alice (you): Administrator', 'bob: Member']);

        // The last administrator cannot leave: the server's 409, in its words.
        await page.getByRole('button', { name: 'Leave group' }).click();
        await page.getByRole('button', { name: 'Leave', exact: true }).click();
        await page
          .locator('#group-status.alert', {
            hasText: 'A group needs an administrator: make someone else one first.',
          })
          .waitFor();
        assert.equal(await membership(page), 'Administrator');
        assert.equal(await focusedText(page), 'Leave', 'focus stays on the refused button');
        await page.getByRole('button', { name: 'Cancel' }).click();
        // Nor step down.
        await page.getByRole('button', { name: 'Stop being an administrator' }).click();
        await page.getByRole('button', { name: 'Step down' }).click();
        await page.locator('#group-status.alert', { hasText: 'A group needs an administrator' }).waitFor();
        assert.equal(await membership(page), 'Administrator');

        await page.getByRole('button', { name: 'Refuse uma' }).click();
        await said(page, 'You refused uma’s request.');
        assert.equal(await page.getByText('No one is waiting to join.').count(), 1);
        assert.equal(await focusedText(page), 'Requests to join (0)');

        await page.getByRole('button', { name: 'Make bob an administrator' }).click();
        await said(page, 'bob is now an administrator of Orchestra.');
        assert.deepEqual(await rows(page, 'Members'), ['alice (you): Administrator', 'bob: Administrator']);
        // bob sees his new standing, and the administration, on his next request.
        await bob.page.reload();
        await expectHeading(bob.page, 'Orchestra');
        assert.equal(await membership(bob.page), 'Administrator');
        await bob.page.getByRole('heading', { name: 'Members (2)' }).waitFor();

        await page.getByRole('button', { name: 'Make bob a member' }).click();
        await said(page, 'bob is now a member, no longer an administrator.');
        assert.deepEqual(await rows(page, 'Members'), ['alice (you): Administrator', 'bob: Member']);

        // bob's page is out of date: his action is refused and the page shows what is.
        await bob.page.getByRole('button', { name: 'Make alice a member' }).click();
        await bob.page.locator('#group-status.alert', { hasText: 'Only an administrator' }).waitFor();
        // Repainted as the server now says, focus on the sentence that says why.
        await bob.page.waitForFunction(() => document.activeElement?.id === 'group-status');
        assert.equal(await membership(bob.page), 'Member');
        assert.equal(await bob.page.locator('.admin-section').count(), 0, 'no administration for a member');

        await page.getByRole('button', { name: 'Remove bob' }).click();
        assert.equal(await focusedText(page), 'Cancel');
        const cancel = page.getByRole('button', { name: 'Cancel' });
        assert.equal(
          await cancel.evaluate((button) => button.getAttribute('aria-describedby')),
          await page.locator('.confirm-question').getAttribute('id'),
          'the question is read with the focused answer',
        );
        assert.equal(await page.locator('.confirm-question').textContent(), 'Remove bob from Orchestra?');
        await page.keyboard.press('Escape');
        assert.equal(
          await page.evaluate(() => document.activeElement?.getAttribute('aria-label')),
          'Remove bob',
        );
        assert.equal(await page.locator('.confirm-question').count(), 0, 'Escape answers no');
        await page.getByRole('button', { name: 'Remove bob' }).click();
        await page.getByRole('button', { name: 'Remove', exact: true }).click();
        await said(page, 'bob is no longer in Orchestra.');
        await page.getByRole('heading', { name: 'Members (1)' }).waitFor();
        assert.deepEqual(await rows(page, 'Members'), ['alice (you): Administrator']);
        await bob.page.reload();
        await expectHeading(bob.page, 'Orchestra');
        assert.equal(await membership(bob.page), 'Not a member');
      });
    },
  );

  test(
    "an administrator edits the group's texts; a text over its limit is refused at its field",
    TEST_TIMEOUT,
    async () => {
      const quinn = await signedIn('quinn', DESKTOP, '/group/12');
      await withTabs([quinn], async () => {
        const page = quinn.page;
        await expectHeading(page, 'Robotics');
        await page.getByRole('button', { name: 'Edit texts' }).click();
        assert.equal(await page.evaluate(() => document.activeElement?.id ?? ''), 'text-description');
        await page.getByLabel('Requirement to join').fill('x'.repeat(501));
        await page.getByRole('button', { name: 'Save' }).click();
        assert.equal(
          await page.locator('#text-short_description-error').textContent(),
          'Ensure this field has no more than 500 characters.',
        );
        assert.equal(await page.evaluate(() => document.activeElement?.id ?? ''), 'text-short_description');
        assert.equal(await page.getByLabel('Requirement to join').getAttribute('aria-invalid'), 'true');

        await page.getByLabel('Requirement to join').fill('Curiosity; no soldering needed.');
        assert.equal(
          await page.locator('#text-short_description-error').textContent(),
          '',
          'editing the refused text clears its complaint',
        );
        await page.getByLabel('Activities').fill('Saturdays in the lab.\nA competition in June.');
        await page.locator('.texts-editor').evaluate((form) => form.scrollIntoView());
        await screenshot(page, 'group-edit');
        await page.getByRole('button', { name: 'Save' }).click();
        await said(page, 'The group’s texts are saved.');
        assert.equal(await focusedText(page), 'Edit texts');
        const details = (await page.locator('.details').textContent()) ?? '';
        assert.match(details, /Requirement to joinCuriosity; no soldering needed\./);
        assert.match(details, /ActivitiesSaturdays in the lab\.\nA competition in June\./);
        await page.reload();
        await expectHeading(page, 'Robotics');
        assert.match(
          (await page.locator('.details').textContent()) ?? '',
          /Curiosity; no soldering needed\./,
        );

        // Cancel leaves the texts as they were.
        await page.getByRole('button', { name: 'Edit texts' }).click();
        await page.getByLabel('About').fill('Something else.');
        await page.getByRole('button', { name: 'Cancel' }).click();
        assert.equal(await focusedText(page), 'Edit texts');
        assert.match(
          (await page.locator('.details').textContent()) ?? '',
          /Build and program small robots\./,
        );
      });
    },
  );

  test(
    'the search ignores case and accents, filters by type and pages 50 at a time',
    TEST_TIMEOUT,
    async () => {
      const carol = await signedIn('carol', DESKTOP, '/groups');
      await withTabs([carol], async () => {
        const page = carol.page;
        await expectHeading(page, 'Find a group');
        await page.getByLabel('Search').fill('CAFE THEATRE');
        await searchSays(page, '1 group found.');
        assert.deepEqual(await resultNames(page), ['Café Théâtre']);

        await page.getByLabel('Search').fill('workshop');
        await searchSays(page, `${WORKSHOPS} groups found. Page 1 of 2.`);
        const first = await resultNames(page);
        assert.equal(first.length, 50);
        await page.getByRole('button', { name: 'Next page' }).click();
        await searchSays(page, `${WORKSHOPS} groups found. Page 2 of 2.`);
        const second = await resultNames(page);
        assert.equal(second.length, WORKSHOPS - 50);
        assert.deepEqual(
          [...first, ...second].sort(),
          Array.from({ length: WORKSHOPS }, (_, i) => `Workshop ${String(i + 1).padStart(2, '0')}`),
          'the two pages hold every workshop once',
        );
        assert.equal(await page.evaluate(() => document.activeElement?.id ?? ''), 'search-status');
        assert.equal(await page.getByRole('button', { name: 'Next page' }).isDisabled(), true);
        assert.equal(new URL(page.url()).search, '?q=workshop&page=2');
        await page.reload();
        await searchSays(page, 'Page 2 of 2.');
        assert.equal(await page.getByLabel('Search').inputValue(), 'workshop', 'the reload keeps the search');
        await page.goBack();
        await searchSays(page, 'Page 1 of 2.');

        await page.getByLabel('Type').selectOption({ label: 'Classrooms' });
        await searchSays(page, `${WORKSHOPS / 2} groups found.`);
        assert.equal(await page.locator('.pager').isHidden(), true, 'one page: no pager');
        assert.equal(new URL(page.url()).search, '?q=workshop&type=1');
        assert.equal(await page.locator('.group-card .badge-type-1').count(), WORKSHOPS / 2);

        await page.getByLabel('Search').fill('no such group anywhere');
        await searchSays(page, 'No group matches “no such group anywhere”.');
        assert.equal(await page.locator('.group-card').count(), 0);

        // carol's own request (the demo's) shows in the results.
        await page.getByLabel('Type').selectOption({ label: 'All types' });
        await page.getByLabel('Search').fill('hiking');
        await searchSays(page, '1 group found.');
        assert.equal(await page.locator('.group-card .badge-status-0').textContent(), 'Request pending');
      });
    },
  );

  test(
    'keyboard only: search, open a group, ask to join and withdraw with Tab and Enter',
    TEST_TIMEOUT,
    async () => {
      const uma = await signedIn('uma', DESKTOP, '/groups');
      await withTabs([uma], async () => {
        const page = uma.page;
        await expectHeading(page, 'Find a group');
        // Focus is on the heading after the page change; the search field is next.
        await page.keyboard.press('Tab');
        assert.equal(await page.evaluate(() => document.activeElement?.id ?? ''), 'group-search');
        await page.keyboard.type('robotics');
        await page.keyboard.press('Enter');
        await searchSays(page, '1 group found.');
        await page.keyboard.press('Tab'); // Type
        await page.keyboard.press('Tab'); // Search
        await page.keyboard.press('Tab'); // the first result
        assert.equal(await focusedText(page), 'Robotics');
        await page.keyboard.press('Enter');
        await expectHeading(page, 'Robotics');
        // Focus is on the group's name; the way in is the next stop.
        await page.keyboard.press('Tab');
        assert.equal(await focusedText(page), 'Ask to join');
        await page.keyboard.press('Enter');
        await said(page, 'Your request to join Robotics was sent.');
        assert.equal(await focusedText(page), 'Withdraw request');
        await page.keyboard.press('Enter');
        await said(page, 'You withdrew your request to join.');
        assert.equal(await focusedText(page), 'Ask to join');
        assert.equal(await membership(page), 'Not a member');
      });
    },
  );

  test(
    'at phone width (375 px) the search and the administration do not scroll sideways',
    TEST_TIMEOUT,
    async () => {
      const alice = await signedIn('alice', PHONE, '/groups?q=workshop');
      await withTabs([alice], async () => {
        const page = alice.page;
        await expectHeading(page, 'Find a group');
        await searchSays(page, 'Page 1 of 2.');
        assert.equal(await horizontalOverflow(page), 0, 'find a group');
        await screenshot(page, 'phone-find');
        await page.goto('/group/1');
        await expectHeading(page, 'Chess Club');
        await page.getByRole('heading', { name: /^Members \(\d+\)$/ }).waitFor();
        assert.equal(await horizontalOverflow(page), 0, 'the administration');
        await page.getByRole('button', { name: 'Edit texts' }).click();
        assert.equal(await horizontalOverflow(page), 0, 'the texts editor');
      });
    },
  );
});
