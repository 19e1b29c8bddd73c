// The web client end to end: headless Chromium against the real service (real HTTP, SQLite, and a
// private Dovecot over TLS), doing what a person does: sign in, look at groups, follow deep links,
// sign out. Screenshots of each page go to docs/screenshots/.
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';
import Fastify, { type FastifyBaseLogger } from 'fastify';
import type { Browser, Page } from 'playwright-core';
import { buildWebClient, type WebBuild } from '../../scripts/build-web.ts';
import { loadConfig } from '../../src/config/config.ts';
import { applyImport } from '../../src/groups/import.ts';
import { NOT_BUILT_DETAIL, registerWebClient, WEB_CSP } from '../../src/http/web.ts';
import { createLogger } from '../../src/logger.ts';
import { type RunningServer, startServer } from '../../src/server.ts';
import { openStores } from '../../src/store/open.ts';
import { lineSink } from '../helpers/app.ts';
import { launchChromium, watchedPage } from '../helpers/browser.ts';
import { type Dovecot, startDovecot, testUser } from '../helpers/dovecot.ts';

const SCREENSHOTS = fileURLToPath(new URL('../../docs/screenshots/', import.meta.url));
const DEMO_DATA = fileURLToPath(new URL('../../scripts/demo-data.json', import.meta.url));
const JS_GZIP_BUDGET = 50 * 1024;
// A group whose name is one long word: the usual way a page grows wider than a phone.
const LONG_NAME = `Interdepartmental${'-working-group'.repeat(6)}`;
const DESKTOP = { width: 1024, height: 720 };
const PHONE = { width: 375, height: 740 };
// Two devices for "Where you're signed in" (contract §9), as their browsers would say.
const LAPTOP_UA = 'Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0';
const PHONE_UA =
  'Mozilla/5.0 (iPhone; CPU iPhone OS 18_1 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/18.1 Mobile/15E148 Safari/604.1';
const TEST_TIMEOUT = { timeout: 240_000 };

// The page's globals, as far as the functions run in the browser (page.evaluate) use them: the test
// tsconfig has no DOM library.
declare const document: {
  readonly activeElement: { readonly id: string; readonly textContent: string | null } | null;
  readonly documentElement: { readonly scrollWidth: number; readonly clientWidth: number };
  getElementById(id: string): { readonly textContent: string | null } | null;
};
declare function getComputedStyle(
  element: unknown,
  pseudo?: string,
): {
  readonly outlineStyle: string;
  readonly outlineWidth: string;
};

let built: WebBuild;
let dovecot: Dovecot | undefined;
let server: RunningServer | undefined;
let browser: Browser | undefined;
let dir: string | undefined;
/** The service's log lines (JSON), so a test can tell that no request ended in a server error. */
const serverLogs: string[] = [];

before(
  async () => {
    built = await buildWebClient();
    dovecot = await startDovecot();
    dir = mkdtempSync(path.join(tmpdir(), 'clubhouse-web-'));
    const config = loadConfig({
      HOST: '127.0.0.1',
      PORT: '0',
      DATABASE_URL: `sqlite:${path.join(dir, 'db.sqlite')}`,
      IMAP_HOST: 'localhost',
      IMAP_PORT: String(dovecot.tlsPort),
      IMAP_SECURITY: 'tls',
      IMAP_CA_FILE: dovecot.caFile,
      // The 3rd failure for one username is throttled, so the 429 case needs only a few attempts.
      THROTTLE_USER_FAILURES: '2',
      LOG_LEVEL: 'warn',
    });
    const stores = await openStores(config.store);
    try {
      const demo = JSON.parse(readFileSync(DEMO_DATA, 'utf8')) as Record<string, unknown[]>;
      const extra = {
        groups: [
          {
            id: 6,
            name: LONG_NAME,
            description: `${'Averyveryverylongwordwithoutanyspaces'.repeat(4)}\nSecond line.`,
            short_description: '',
            activities: 'Meetings.',
            type: 0,
          },
        ],
        users: [],
        memberships: [{ group: 6, username: 'dave', status: 1 }],
      };
      for (const data of [demo, extra]) {
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
  /** Console errors, page errors and CSP reports seen so far. */
  readonly problems: string[];
  close(): Promise<void>;
}

/**
 * A fresh browser context (no cookies) and page that records every console error and uncaught
 * exception. The only console errors allowed are Chromium's "Failed to load resource" lines for
 * /api answers that are refusals by design (check's 403 when signed out, a failed login's 403/429,
 * an unknown group's 404, a group's 403 once the session was ended from another device).
 */
async function openTab(viewport = DESKTOP, userAgent?: string): Promise<Tab> {
  assert.ok(browser !== undefined, 'browser launched');
  const base = baseUrl();
  const { context, page, problems } = await watchedPage(browser, {
    viewport,
    baseURL: base,
    ...(userAgent === undefined ? {} : { userAgent }),
    warnings: true,
    expected: ({ status, where }) =>
      ((status === '403' || status === '429') && where.startsWith(`${base}/api/auth/`)) ||
      ((status === '404' || status === '403') && where.startsWith(`${base}/api/group/`)),
  });
  return { page, problems, close: () => context.close() };
}

async function withTab(viewport: typeof DESKTOP, body: (page: Page) => Promise<void>): Promise<void> {
  const tab = await openTab(viewport);
  try {
    await body(tab.page);
    assert.deepEqual(tab.problems, [], 'no console errors, page errors or CSP violations');
    const errors = serverLogs.filter((line) => (JSON.parse(line) as { level: number }).level >= 50);
    assert.deepEqual(errors, [], 'no server errors');
  } finally {
    await tab.close();
  }
}

async function expectHeading(page: Page, text: string): Promise<void> {
  await page.getByRole('heading', { level: 1, name: text, exact: true }).waitFor();
}

async function signIn(page: Page, username: string, password: string): Promise<void> {
  await page.getByLabel('Username').fill(username);
  await page.getByLabel('Password').fill(password);
  await page.getByRole('button', { name: 'Sign in' }).click();
}

async function loginAlert(page: Page): Promise<string> {
  const alert = page.locator('#login-error');
  await page.waitForFunction(() => (document.getElementById('login-error')?.textContent ?? '') !== '');
  return (await alert.textContent()) ?? '';
}

async function screenshot(page: Page, name: string): Promise<void> {
  // No hover effects from where the last click happened to leave the pointer.
  await page.mouse.move(0, 0);
  await page.screenshot({ path: path.join(SCREENSHOTS, `${name}.png`), animations: 'disabled' });
}

/** The cards of "My groups" as "name (type)". */
async function groupCards(page: Page): Promise<string[]> {
  await page.locator('.group-list').waitFor();
  return page
    .locator('.group-card')
    .evaluateAll((cards) =>
      cards.map(
        (card) =>
          `${card.querySelector('h2')?.textContent ?? ''} (${card.querySelector('.badge')?.textContent ?? ''})`,
      ),
    );
}

async function membership(page: Page): Promise<string> {
  return (await page.locator('.membership .badge').textContent()) ?? '';
}

/** The cards of "Where you're signed in" as "device" or "device (This device)". */
async function sessionCards(page: Page): Promise<string[]> {
  await page.locator('.session-list').waitFor();
  return page.locator('.session-card').evaluateAll((cards) =>
    cards.map((card) => {
      const device = card.querySelector('h2')?.textContent ?? '';
      const badge = card.querySelector('.badge')?.textContent;
      return badge === undefined || badge === null ? device : `${device} (${badge})`;
    }),
  );
}

async function horizontalOverflow(page: Page): Promise<number> {
  return page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
}

async function checkStatus(page: Page): Promise<number> {
  return page.evaluate(async () => (await fetch('/api/auth/check', { credentials: 'same-origin' })).status);
}

describe('web client: serving', () => {
  test('the JavaScript bundle is under 50 KiB gzipped', () => {
    const scripts = built.files.filter((file) => file.name.endsWith('.js'));
    assert.ok(scripts.length > 0, 'the build produced JavaScript');
    const gzipped = scripts.reduce(
      (sum, file) => sum + gzipSync(readFileSync(path.join(built.outdir, file.name)), { level: 9 }).length,
      0,
    );
    assert.ok(gzipped < JS_GZIP_BUDGET, `${gzipped} bytes gzipped`);
  });

  test('/ and /group/{id} serve the shell with the CSP, the security headers and revalidation', async () => {
    for (const pathname of ['/', '/group/7', '/group/007/', '/sessions', '/sessions/']) {
      const response = await fetch(`${baseUrl()}${pathname}`);
      assert.equal(response.status, 200, pathname);
      assert.equal(response.headers.get('content-type'), 'text/html; charset=utf-8');
      assert.equal(response.headers.get('content-security-policy'), WEB_CSP);
      assert.equal(response.headers.get('cache-control'), 'no-cache');
      assert.equal(response.headers.get('x-frame-options'), 'SAMEORIGIN');
      assert.equal(response.headers.get('x-content-type-options'), 'nosniff');
      assert.equal(response.headers.get('referrer-policy'), 'same-origin');
      assert.equal(response.headers.get('cross-origin-opener-policy'), 'same-origin');
      const html = await response.text();
      assert.match(html, /<script type="module" src="\/assets\/app-[A-Z0-9]+\.js"><\/script>/);
      assert.doesNotMatch(html, /<style|style=|<script>/, 'no inline styles or scripts');
      const head = await fetch(`${baseUrl()}${pathname}`, { method: 'HEAD' });
      assert.equal(head.status, 200);
      assert.equal(head.headers.get('content-security-policy'), WEB_CSP);
      assert.equal(await head.text(), '');
      const etag = response.headers.get('etag');
      assert.ok(etag !== null);
      const again = await fetch(`${baseUrl()}${pathname}`, { headers: { 'if-none-match': etag } });
      assert.equal(again.status, 304);
    }
  });

  test('assets are served with their type and a year of caching; other paths are JSON 404s', async () => {
    const html = await (await fetch(`${baseUrl()}/`)).text();
    const assets = [...html.matchAll(/(?:src|href)="(\/assets\/[^"]+)"/g)].map((match) => match[1] ?? '');
    assert.equal(assets.length, 3, 'favicon, stylesheet and script');
    for (const asset of assets) {
      const response = await fetch(`${baseUrl()}${asset}`);
      assert.equal(response.status, 200, asset);
      const type = asset.endsWith('.js')
        ? 'text/javascript'
        : asset.endsWith('.css')
          ? 'text/css'
          : 'image/svg+xml';
      assert.ok(response.headers.get('content-type')?.startsWith(type), asset);
      assert.equal(response.headers.get('cache-control'), 'public, max-age=31536000, immutable');
      assert.equal(response.headers.get('x-content-type-options'), 'nosniff');
    }
    for (const missing of ['/assets/app.js', '/group/abc', '/login', '/favicon.ico']) {
      const response = await fetch(`${baseUrl()}${missing}`);
      assert.equal(response.status, 404, missing);
      assert.deepEqual(await response.json(), { detail: 'Not found.' });
      assert.equal(response.headers.get('x-frame-options'), 'SAMEORIGIN');
    }
  });

  test('without a build, the pages answer 503 naming the fix and a warning is logged', async () => {
    const lines: string[] = [];
    const fastify = Fastify({ loggerInstance: createLogger('warn', lineSink(lines)) as FastifyBaseLogger });
    const missing = path.join(tmpdir(), 'clubhouse-no-such-web-dist');
    registerWebClient(fastify, { distDir: missing });
    try {
      for (const url of ['/', '/group/1']) {
        const response = await fastify.inject({ method: 'GET', url });
        assert.equal(response.statusCode, 503, url);
        assert.deepEqual(response.json(), { detail: NOT_BUILT_DETAIL });
        assert.equal(response.headers['content-security-policy'], WEB_CSP);
      }
      assert.equal((await fastify.inject({ method: 'GET', url: '/assets/app.js' })).statusCode, 404);
      assert.ok(
        lines.some((line) => line.includes('"level":40') && line.includes('npm run build:web')),
        lines.join('\n'),
      );
    } finally {
      await fastify.close();
    }
  });
});

describe('web client: in a browser', () => {
  test('sign in (wrong, then right password), my groups, a group, reload, back, sign out', TEST_TIMEOUT, () =>
    withTab(DESKTOP, async (page) => {
      const alice = testUser('alice');
      const response = await page.goto('/');
      assert.equal(response?.headers()['content-security-policy'], WEB_CSP);
      await expectHeading(page, 'Sign in');
      assert.equal(await page.title(), 'Sign in · clubhouse');
      await screenshot(page, 'login');

      await signIn(page, alice.username, 'not-her-password');
      assert.equal(
        await loginAlert(page),
        'Your username or password was not accepted. Check them and try again.',
      );
      assert.equal(await page.getByLabel('Password').inputValue(), '', 'the wrong password is cleared');
      assert.equal(await page.getByLabel('Password').getAttribute('aria-invalid'), 'true');
      await screenshot(page, 'login-error');

      await signIn(page, alice.username, alice.password);
      await expectHeading(page, 'My groups');
      assert.deepEqual(await groupCards(page), ['Chess Club (Group)', 'Biology 2B (Classroom)']);
      assert.equal(await page.locator('.who').textContent(), 'Signed in as alice');
      await screenshot(page, 'my-groups');

      await page.getByRole('link', { name: 'Chess Club' }).click();
      await expectHeading(page, 'Chess Club');
      assert.equal(new URL(page.url()).pathname, '/group/1');
      assert.equal(await membership(page), 'Administrator');
      const details = (await page.locator('.details').textContent()) ?? '';
      assert.match(details, /Requirement to joinKnow how the pieces move\./);
      assert.match(details, /ActivitiesTuesday evening games/);
      await screenshot(page, 'group');

      await page.reload();
      await expectHeading(page, 'Chess Club');
      assert.equal(await membership(page), 'Administrator', 'the deep link survives a reload');

      await page.goBack();
      await expectHeading(page, 'My groups');
      assert.equal(new URL(page.url()).pathname, '/');

      await page.getByRole('button', { name: 'Sign out' }).click();
      await expectHeading(page, 'Sign in');
      assert.equal(await page.getByRole('status').textContent(), 'You have signed out.');
      assert.equal(await checkStatus(page), 403, 'the session is over on the server too');
    }),
  );

  test(
    'a signed-out visit to a deep link signs in and lands on that group; the hash form works too',
    TEST_TIMEOUT,
    async () => {
      await withTab(DESKTOP, async (page) => {
        const alice = testUser('alice');
        await page.goto('/group/3');
        await expectHeading(page, 'Sign in');
        await signIn(page, alice.username, alice.password);
        await expectHeading(page, 'Hiking Society');
        assert.equal(new URL(page.url()).pathname, '/group/3');
        assert.equal(await membership(page), 'Request pending');

        await page.goto('/#/group/2');
        await expectHeading(page, 'Biology 2B');
        assert.equal(await membership(page), 'Member');
        assert.equal(new URL(page.url()).pathname, '/group/2', 'the hash form becomes the path form');

        await page.goto('/group/99');
        await expectHeading(page, 'Not found');
      });
      await withTab(DESKTOP, async (page) => {
        const bob = testUser('bob');
        await page.goto('/#/group/3');
        await expectHeading(page, 'Sign in');
        await signIn(page, bob.username, bob.password);
        await expectHeading(page, 'Hiking Society');
        assert.equal(await membership(page), 'Not a member');
        assert.equal(new URL(page.url()).pathname, '/group/3');
      });
    },
  );

  test(
    'keyboard only: Tab, type and Enter sign in and open a group, with a visible focus ring',
    TEST_TIMEOUT,
    () =>
      withTab(DESKTOP, async (page) => {
        const bob = testUser('bob');
        await page.goto('/');
        await expectHeading(page, 'Sign in');
        const focused = () => page.evaluate(() => document.activeElement?.id ?? '');
        await page.waitForFunction(() => document.activeElement?.id === 'username');
        await page.keyboard.type(bob.username);
        await page.keyboard.press('Tab');
        assert.equal(await focused(), 'password');
        const ring = await page.evaluate(() => {
          const style = getComputedStyle(document.activeElement);
          return `${style.outlineStyle} ${style.outlineWidth}`;
        });
        assert.equal(ring, 'solid 3px', 'keyboard focus is visible');
        await page.keyboard.type(bob.password);
        await page.keyboard.press('Enter');
        await expectHeading(page, 'My groups');
        assert.deepEqual(await groupCards(page), [
          'Chess Club (Group)',
          'Choir (Group)',
          'Mathematics 1A (Classroom)',
        ]);
        // Focus moved to the new page's heading, so the next Tab reaches the first group.
        await page.keyboard.press('Tab');
        assert.equal(await page.evaluate(() => document.activeElement?.textContent), 'Chess Club');
        // The card link draws its ring round the whole card (its ::after covers the card).
        const cardRing = await page.evaluate(() => {
          const style = getComputedStyle(document.activeElement, '::after');
          return `${style.outlineStyle} ${style.outlineWidth}`;
        });
        assert.equal(cardRing, 'solid 3px', 'the focused group card shows a ring');
        await page.keyboard.press('Tab');
        await page.keyboard.press('Tab');
        assert.equal(await page.evaluate(() => document.activeElement?.textContent), 'Mathematics 1A');
        await page.keyboard.press('Enter');
        await expectHeading(page, 'Mathematics 1A');
        assert.equal(await membership(page), 'Administrator');
      }),
  );

  test('too many failed sign-ins show how long to wait', TEST_TIMEOUT, () =>
    withTab(DESKTOP, async (page) => {
      await page.goto('/');
      await expectHeading(page, 'Sign in');
      // Different wrong passwords: the same one repeated counts once (contract §3).
      for (const guess of ['guess-one', 'guess-two']) {
        await signIn(page, 'mallory', guess);
        assert.match(await loginAlert(page), /not accepted/);
      }
      const throttled = page.waitForResponse((answer) => answer.url().endsWith('/api/auth/login'));
      await signIn(page, 'mallory', 'guess-three');
      const answer = await throttled;
      assert.equal(answer.status(), 429);
      const seconds = Number(answer.headers()['retry-after']);
      assert.ok(seconds > 0 && seconds <= 900, `Retry-After ${seconds}`);
      const wait = seconds < 60 ? `${seconds} seconds` : `${Math.ceil(seconds / 60)} minutes`;
      await page.waitForFunction(() =>
        /wait/.test(document.getElementById('login-error')?.textContent ?? ''),
      );
      assert.equal(
        await loginAlert(page),
        `Too many failed sign-in attempts. Please wait ${wait} before trying again.`,
      );
      await screenshot(page, 'login-throttled');
    }),
  );

  test('a member of no group sees the empty state', TEST_TIMEOUT, () =>
    withTab(DESKTOP, async (page) => {
      const carol = testUser('carol');
      await page.goto('/');
      await signIn(page, carol.username, carol.password);
      await expectHeading(page, 'My groups');
      assert.equal(
        await page.locator('.empty-title').textContent(),
        'You are not a member of any group yet.',
      );
      assert.equal(await page.locator('.group-card').count(), 0);
    }),
  );

  test('at phone width (375 px) no page scrolls sideways, long names included', TEST_TIMEOUT, async () => {
    await withTab(PHONE, async (page) => {
      const alice = testUser('alice');
      await page.goto('/');
      await expectHeading(page, 'Sign in');
      assert.equal(await horizontalOverflow(page), 0, 'login');
      await screenshot(page, 'phone-login');
      await signIn(page, alice.username, alice.password);
      await expectHeading(page, 'My groups');
      assert.equal(await horizontalOverflow(page), 0, 'my groups');
      await screenshot(page, 'phone');
      await page.getByRole('link', { name: 'Biology 2B' }).click();
      await expectHeading(page, 'Biology 2B');
      assert.equal(await horizontalOverflow(page), 0, 'group page');
    });
    await withTab(PHONE, async (page) => {
      const dave = testUser('dave');
      await page.goto('/');
      await signIn(page, dave.username, dave.password);
      await expectHeading(page, 'My groups');
      assert.equal(await horizontalOverflow(page), 0, 'my groups with a long name');
      await page.getByRole('link', { name: LONG_NAME }).click();
      await expectHeading(page, LONG_NAME);
      assert.equal(await horizontalOverflow(page), 0, 'group page with a long name');
    });
  });

  test(
    "Where you're signed in: two browsers see both; one ends the other, then everywhere ends both",
    TEST_TIMEOUT,
    async () => {
      const alice = testUser('alice');
      const laptop = await openTab(DESKTOP, LAPTOP_UA);
      const phone = await openTab(PHONE, PHONE_UA);
      try {
        for (const tab of [laptop, phone]) {
          await tab.page.goto('/');
          await signIn(tab.page, alice.username, alice.password);
          await expectHeading(tab.page, 'My groups');
        }
        const page = laptop.page;
        await page.getByRole('link', { name: 'Where you’re signed in' }).click();
        await expectHeading(page, 'Where you’re signed in');
        assert.equal(new URL(page.url()).pathname, '/sessions');
        // Newest first; alice's sessions of the earlier tests (Chromium's own user agent) come after.
        const before = await sessionCards(page);
        assert.deepEqual(before.slice(0, 2), ['Safari on iOS', 'Firefox on Linux (This device)']);
        assert.equal(await page.locator('.session-facts dd').first().textContent(), '127.0.0.1');
        await screenshot(page, 'sessions');

        // Keyboard: the phone's button, named for its session, is reached and pressed with Enter.
        const phoneButton = page.getByRole('button', { name: /^Sign out Safari on iOS, signed in / });
        await phoneButton.focus();
        await page.keyboard.press('Enter');
        await page.locator('#sessions-status', { hasText: 'Signed out Safari on iOS.' }).waitFor();
        assert.deepEqual(await sessionCards(page), before.slice(1), 'the phone is gone, the rest stays');

        // The phone is signed out on its very next request.
        assert.equal(await checkStatus(phone.page), 403);
        await phone.page.getByRole('link', { name: 'Biology 2B' }).click();
        await expectHeading(phone.page, 'Sign in');
        assert.match((await phone.page.locator('.notice').textContent()) ?? '', /session has ended/);
        assert.equal(await checkStatus(page), 200, 'the laptop is still signed in');

        // Signed in again on the phone (phone width: nothing scrolls sideways), then everywhere ends both.
        await signIn(phone.page, alice.username, alice.password);
        await expectHeading(phone.page, 'Biology 2B');
        await phone.page.goto('/sessions');
        await expectHeading(phone.page, 'Where you’re signed in');
        assert.deepEqual((await sessionCards(phone.page)).slice(0, 2), [
          'Safari on iOS (This device)',
          'Firefox on Linux',
        ]);
        assert.equal(await horizontalOverflow(phone.page), 0, 'the sessions page at phone width');
        await screenshot(phone.page, 'phone-sessions');
        await page.getByRole('button', { name: 'Sign out everywhere' }).click();
        await expectHeading(page, 'Sign in');
        assert.equal(await page.locator('.notice').textContent(), 'You have signed out everywhere.');
        assert.equal(await checkStatus(page), 403);
        assert.equal(await checkStatus(phone.page), 403);
        await phone.page.reload();
        await expectHeading(phone.page, 'Sign in');
        for (const tab of [laptop, phone]) assert.deepEqual(tab.problems, [], 'no console or page errors');
        const errors = serverLogs.filter((line) => (JSON.parse(line) as { level: number }).level >= 50);
        assert.deepEqual(errors, [], 'no server errors');
      } finally {
        await laptop.close();
        await phone.close();
      }
    },
  );

  test('ending this device from the list signs it out', TEST_TIMEOUT, () =>
    withTab(DESKTOP, async (page) => {
      const bob = testUser('bob');
      await page.goto('/sessions');
      await expectHeading(page, 'Sign in');
      await signIn(page, bob.username, bob.password);
      await expectHeading(page, 'Where you’re signed in');
      await page.getByRole('button', { name: /\(this device\), signed in / }).click();
      await expectHeading(page, 'Sign in');
      assert.equal(await page.locator('.notice').textContent(), 'You have signed out.');
      assert.equal(await checkStatus(page), 403);
    }),
  );
});
