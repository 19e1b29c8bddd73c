// Headless Chromium for the suites that drive the web client as a person does (test/web/*,
// test/oidc/browser.test.ts): Debian's chromium under playwright-core, launched one way, and pages
// that record what went wrong in them (page errors, console errors) but the refusals a suite expects
// by design, for the suite to assert that nothing did.
import {
  type Browser,
  type BrowserContext,
  type BrowserContextOptions,
  chromium,
  type Page,
} from 'playwright-core';
import { ensureDebianPackage } from './apt.ts';

const CHROMIUM = '/usr/bin/chromium';
/** Generous: Chromium on a loaded two-core machine can be slow; nothing here is a timing assertion. */
const ACTION_TIMEOUT_MS = 60_000;

/** Installs Debian's chromium when missing and launches it headless; `args` adds to its flags. */
export async function launchChromium(args: readonly string[] = []): Promise<Browser> {
  await ensureDebianPackage(CHROMIUM, 'chromium');
  return chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    timeout: 180_000,
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      ...args,
    ],
  });
}

/** A console line of a page, as `expected` is asked about it. */
export interface ConsoleLine {
  readonly type: string;
  readonly text: string;
  /** The URL it is about. */
  readonly where: string;
  /** The HTTP status of Chromium's "Failed to load resource" line; undefined for any other line. */
  readonly status: string | undefined;
}

export interface WatchedPageOptions extends BrowserContextOptions {
  /** Record console warnings too, not only errors. */
  readonly warnings?: boolean;
  /** The console lines that are refusals by design, not problems. */
  readonly expected: (line: ConsoleLine) => boolean;
  /** Runs in every page of the context before its own scripts (Playwright's addInitScript). */
  readonly initScript?: () => void;
}

export interface WatchedPage {
  readonly context: BrowserContext;
  readonly page: Page;
  /** Page errors and console lines not `expected`, seen so far. */
  readonly problems: string[];
}

/**
 * A fresh browser context (no cookies) with the suites' action and navigation timeouts, and a page in
 * it recording every page error and every console error (and warning, with `warnings`) that is not
 * `expected`.
 */
export async function watchedPage(browser: Browser, options: WatchedPageOptions): Promise<WatchedPage> {
  const { warnings, expected, initScript, ...contextOptions } = options;
  const context = await browser.newContext(contextOptions);
  context.setDefaultTimeout(ACTION_TIMEOUT_MS);
  context.setDefaultNavigationTimeout(ACTION_TIMEOUT_MS);
  if (initScript !== undefined) await context.addInitScript(initScript);
  const page = await context.newPage();
  const problems: string[] = [];
  page.on('pageerror', (error) => problems.push(`pageerror: ${error.message}`));
  page.on('console', (message) => {
    const type = message.type();
    if (type !== 'error' && !(warnings === true && type === 'warning')) return;
    const text = message.text();
    const where = message.location().url;
    const status = /^Failed to load resource: the server responded with a status of (\d+) /.exec(text)?.[1];
    if (!expected({ type, text, where, status })) problems.push(`console ${type}: ${text} (${where})`);
  });
  return { context, page, problems };
}
