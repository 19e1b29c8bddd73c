// The cost of one sign-in at an identity provider (contract §10), start to session, against the real
// provider of the tests (oidc-provider behind its TLS relay, on loopback): the requests a browser
// makes, the time from start to the session cookie, and the provider's share of it (its answers to
// the browser and to clubhouse's token request, as the relay times them). clubhouse is answered in
// process (Fastify inject), the provider over real HTTPS. Run: node bench/cases/oidc-flow.ts [runs]
import { startTestApp } from '../../test/helpers/app.ts';
import { PUBLIC_URL, startOidcHarness, TestBrowser } from '../../test/helpers/oidc.ts';

const runs = Number(process.argv[2] ?? 20);
const harness = await startOidcHarness();
const app = await startTestApp({ env: harness.env });
const { school } = harness;

const median = (values: readonly number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2;
};

/** One sign-in, step by step, as a browser makes it. */
async function once() {
  const browser = new TestBrowser(app.fastify, harness.providerFetch);
  const seen = school.requests.length;
  const started = performance.now();
  const start = await browser.get(`${PUBLIC_URL}/api/auth/oidc/school/start`);
  const toLogin = await browser.get(start.location ?? '');
  const form = await browser.get(toLogin.location ?? '');
  const action = /action="([^"]+)"/.exec(form.body)?.[1] ?? '';
  const posted = await browser.postForm(new URL(action, form.url).href, {
    login: 'bob',
    password: 'bob-provider-password',
  });
  const resumed = await browser.get(posted.location ?? '');
  const done = await browser.get(resumed.location ?? '');
  const total = performance.now() - started;
  if (!done.setCookies.some((line) => line.startsWith('sessionid=')))
    throw new Error(`no session: ${done.status}`);
  return {
    total,
    providerMs: school.durations.slice(seen).reduce((sum, ms) => sum + ms, 0),
    providerRequests: school.requests.slice(seen),
  };
}

await once(); // warm-up: discovery and the keys are read once, then cached
const results = [];
for (let i = 0; i < runs; i++) results.push(await once());
const total = median(results.map((r) => r.total));
const provider = median(results.map((r) => r.providerMs));
process.stdout.write(
  `${JSON.stringify(
    {
      runs,
      browserRequests: 6,
      clubhouseRequests: 2,
      providerRequests: results[0]?.providerRequests,
      medianStartToSessionMs: Math.round(total * 10) / 10,
      medianProviderMs: Math.round(provider * 10) / 10,
      providerShare: `${Math.round((provider / total) * 100)}%`,
    },
    null,
    2,
  )}\n`,
);
await app.close();
await harness.stop();
