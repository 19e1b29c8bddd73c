// The README's first command, proven: `npm run demo` (a private Dovecot), `-- --ldap` (a private
// slapd) and `-- --oidc` (a private OpenID Provider) each serve the demo users and the sample groups,
// and the way in the demo prints works: the curl lines for a password, the provider's button and
// sign-in page for OIDC, at the address it prints (localhost, where passkeys are on: contract §12). Each demo runs as `npm run demo` runs it (scripts/demo.ts in its own node
// process), on a port and database of the test's own, and stops on SIGTERM.
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { Agent, fetch as undiciFetch } from 'undici';
import { type ManagedChild, removeOnExit, spawnManaged } from '../helpers/child.ts';
import { DEMO_USERS } from '../helpers/dovecot.ts';
import { freePort } from '../helpers/ports.ts';

const DEMO = new URL('../../scripts/demo.ts', import.meta.url).pathname;
const ALICE_GROUP = 'Chess Club'; // scripts/demo-data.json: alice administers it

/** Starts the demo as `npm run demo -- ARGS` does; resolves once it says it is serving. */
async function startDemo(args: readonly string[]): Promise<{ demo: ManagedChild; url: string }> {
  const dir = mkdtempSync(path.join(tmpdir(), 'clubhouse-demo-test-'));
  removeOnExit(dir);
  const port = await freePort();
  const demo = spawnManaged(process.execPath, ['--disable-warning=ExperimentalWarning', DEMO, ...args], {
    env: {
      ...process.env,
      PORT: String(port),
      HOST: '127.0.0.1',
      DATABASE_URL: `sqlite:${path.join(dir, 'demo.db')}`,
    },
  });
  for (let waited = 0; !demo.output().includes('clubhouse demo is serving at'); waited += 100) {
    if (!demo.running() || waited > 120_000)
      throw new Error(`the demo did not start:\n${await demo.finalOutput()}`);
    await sleep(100);
  }
  // The address a newcomer opens: localhost (a passkey is bound to a host name, never an IP address).
  const printed = /clubhouse demo is serving at (\S+)\/ /.exec(demo.output())?.[1];
  assert.equal(printed, `http://localhost:${port}`);
  return { demo, url: printed };
}

/** A browser's cookie jar per host and manual redirects, over fetch (the provider's CA is the demo's own). */
function browser() {
  const dispatcher = new Agent({ connect: { rejectUnauthorized: false } });
  const jar = new Map<string, Map<string, string>>();
  const cookies = (url: URL) =>
    [...(jar.get(url.host) ?? new Map<string, string>())].map(([k, v]) => `${k}=${v}`).join('; ');
  return {
    cookie: (origin: string, name: string) => jar.get(new URL(origin).host)?.get(name),
    close: () => dispatcher.close(),
    async request(
      address: string,
      init: { method?: string; form?: Record<string, string>; json?: unknown } = {},
    ) {
      const url = new URL(address);
      const headers: Record<string, string> = { cookie: cookies(url) };
      let body: string | undefined;
      if (init.form !== undefined) {
        headers['content-type'] = 'application/x-www-form-urlencoded';
        body = new URLSearchParams(init.form).toString();
      } else if (init.json !== undefined) {
        headers['content-type'] = 'application/json';
        body = JSON.stringify(init.json);
      }
      const response = await undiciFetch(url, {
        method: init.method ?? 'GET',
        headers,
        body,
        redirect: 'manual',
        dispatcher,
      });
      const hostJar = jar.get(url.host) ?? new Map<string, string>();
      jar.set(url.host, hostJar);
      for (const line of response.headers.getSetCookie()) {
        const [pair = ''] = line.split(';');
        const at = pair.indexOf('=');
        if (/max-age=0/i.test(line)) hostJar.delete(pair.slice(0, at));
        else hostJar.set(pair.slice(0, at), pair.slice(at + 1));
      }
      const location = response.headers.get('location');
      return {
        status: response.status,
        location: location === null ? null : new URL(location, url).href,
        text: await response.text(),
      };
    },
  };
}

const running: ManagedChild[] = [];
after(async () => {
  await Promise.all(running.map((demo) => demo.stop('SIGTERM')));
});

/** The README's curl lines: alice logs in with her password and lists her groups (and the request waiting in one). */
async function passwordWalk(url: string) {
  const person = browser();
  try {
    const [alice] = DEMO_USERS;
    const login = await person.request(`${url}/api/auth/login`, {
      method: 'POST',
      json: { username: alice!.username, password: alice!.password },
    });
    assert.equal(login.status, 200, login.text);
    assert.equal(login.text, '"alice"');
    const groups = await person.request(`${url}/api/group/`);
    assert.equal(groups.status, 200);
    assert.ok(groups.text.includes(ALICE_GROUP), groups.text);
    // contract §13: a newcomer sees the whole loop: alice has a request to decide in her group.
    const members = await person.request(`${url}/api/group/1/members`);
    assert.equal(members.status, 200, members.text);
    const rows = (JSON.parse(members.text) as { username: string; member_status: number }[]).map(
      (row) => `${row.username}:${row.member_status}`,
    );
    assert.deepEqual(rows, ['carol:0', 'alice:2', 'bob:1']);
    const wrong = await browser().request(`${url}/api/auth/login`, {
      method: 'POST',
      json: { username: 'alice', password: 'not-her-password' },
    });
    assert.equal(wrong.status, 403);
  } finally {
    await person.close();
  }
}

/** contract §12: the demo offers passkey sign-in, bound to localhost, so a browser there can use one. */
async function passkeysOn(url: string) {
  const person = browser();
  try {
    const options = await person.request(`${url}/api/auth/passkeys/authentication`, { method: 'POST' });
    assert.equal(options.status, 200, options.text);
    const body = JSON.parse(options.text) as { rpId?: unknown; challenge?: unknown };
    assert.equal(body.rpId, 'localhost');
    assert.equal(typeof body.challenge, 'string');
  } finally {
    await person.close();
  }
}

describe('npm run demo', () => {
  for (const [name, args] of [
    ['a private Dovecot', []],
    ['-- --ldap: a private slapd', ['--ldap']],
  ] as const) {
    test(`${name}: alice logs in as the demo prints and sees her groups; passkeys are on; SIGTERM stops it`, async () => {
      const { demo, url } = await startDemo(args);
      running.push(demo);
      await passwordWalk(url);
      await passkeysOn(url);
      await demo.stop('SIGTERM');
      assert.equal(await demo.exited, 0);
    });
  }

  test('-- --oidc: the provider’s button, its sign-in page, and back with a session', async () => {
    const { demo, url } = await startDemo(['--oidc']);
    running.push(demo);
    const person = browser();
    try {
      const providers = await person.request(`${url}/api/auth/providers`);
      assert.equal(providers.status, 200);
      assert.deepEqual(JSON.parse(providers.text), [
        { name: 'demo', label: 'Sign in with the demo provider' },
      ]);
      const start = await person.request(`${url}/api/auth/oidc/demo/start`);
      assert.equal(start.status, 302);
      const toLogin = await person.request(start.location ?? '');
      const form = await person.request(toLogin.location ?? '');
      assert.equal(form.status, 200);
      const action = /action="([^"]+)"/.exec(form.text)?.[1] ?? '';
      const posted = await person.request(new URL(action, toLogin.location ?? '').href, {
        method: 'POST',
        form: { login: 'bob', password: 'bob-password' },
      });
      const resumed = await person.request(posted.location ?? '');
      assert.ok(resumed.location?.startsWith(`${url}/api/auth/oidc/demo/callback?`), resumed.location ?? '');
      const back = await person.request(resumed.location ?? '');
      assert.equal(back.status, 302);
      assert.equal(back.location, `${url}/`);
      const check = await person.request(`${url}/api/auth/check`);
      assert.equal(check.text, '"bob"');
    } finally {
      await person.close();
    }
    await demo.stop('SIGTERM');
    assert.equal(await demo.exited, 0);
  });
});
