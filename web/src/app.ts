// The clubhouse web client: asks /api/auth/check who is signed in, then shows the login form or the
// page the address names (`/`, `/group/7`, or the hash form `/#/group/7`), and keeps the address
// and the page in step as people click, go back, sign in and sign out.
import {
  checkSession,
  deletePasskey,
  endSession,
  getGroup,
  listGroups,
  listPasskeys,
  listSessions,
  logIn,
  logOut,
  logOutEverywhere,
  type PasskeyInfo,
  passkeyAuthenticationOptions,
  passkeySettings,
  renamePasskey,
  type SessionInfo,
  type SignInMethods,
  setPasswordSignIn,
  signInMethods,
} from './api.ts';
import { h } from './dom.ts';
import { findGroupsPage, queryFromAddress, runSearch } from './find-groups.ts';
import { groupView } from './group-page.ts';
import {
  cancelPasskeyCeremony,
  createPasskeyHere,
  type PasskeyOutcome,
  passkeyAutofillHere,
  signInWithOptions,
  signInWithPasskey,
  webAuthnHere,
} from './passkeys.ts';
import { passkeyOffer, passkeysPage, showPasskeyAlert } from './passkeys-view.ts';
import { sessionsPage } from './sessions-view.ts';
import {
  deviceLabel,
  type Failure,
  failureText,
  loginErrorText,
  needsRecentSignIn,
  passkeyLoginErrorText,
  passkeyRefusalText,
} from './text.ts';
import {
  groupsPage,
  type LoginFailure,
  loading,
  loggedInFrame,
  loginPage,
  notFoundPage,
  unavailablePage,
} from './views.ts';

type Route =
  | { readonly page: 'groups' }
  | { readonly page: 'sessions' }
  | { readonly page: 'find' }
  | { readonly page: 'passkeys' }
  | { readonly page: 'group'; readonly id: number }
  | { readonly page: 'unknown' };

const GROUP_PATH = /^\/group\/(\d{1,10})\/?$/;

function routeOf(path: string): Route {
  if (path === '/' || path === '') return { page: 'groups' };
  if (path === '/sessions' || path === '/sessions/') return { page: 'sessions' };
  if (path === '/groups' || path === '/groups/') return { page: 'find' };
  if (path === '/passkeys' || path === '/passkeys/') return { page: 'passkeys' };
  const match = GROUP_PATH.exec(path);
  return match === null ? { page: 'unknown' } : { page: 'group', id: Number(match[1]) };
}

const root = document.getElementById('app') ?? document.body;

/** The signed-in username; null while signed out. */
let user: string | null = null;
/** How people sign in here (contract §10: the providers' buttons); read once, when first needed. */
let methods: Promise<SignInMethods> | null = null;
/** contract §10: a sign-in at a provider came back failed (`/?signin=failed`); said once. */
let signInFailed = false;
/** Bumped on every page change, so an answer that arrives late cannot paint over a newer page. */
let generation = 0;
/**
 * contract §12: whether passkeys are on here (`X-Passkeys` beside the providers; off, their endpoints
 * answer 404 and the client shows no passkey anywhere); null until an answer said so.
 */
let passkeysOn: boolean | null = null;
/** Set by a password sign-in: the next page offers to create a passkey (contract §12). */
let offerPasskey = false;

function mount(title: string, ...nodes: Node[]): void {
  document.title = `${title} · clubhouse`;
  root.replaceChildren(...nodes);
}

async function showLogin(notice?: string): Promise<void> {
  const mine = ++generation;
  cancelPasskeyCeremony();
  methods ??= signInMethods();
  const known = await methods;
  passkeysOn ??= known.passkeys;
  // contract §12: the options of a passkey sign-in, fetched with the page: the username field's
  // autofill offers the passkeys with them.
  const offered = webAuthnHere() && passkeysOn ? await passkeyAuthenticationOptions() : null;
  if (mine !== generation) return;
  if (offered !== null && offered.status === 404) passkeysOn = false;
  const error = signInFailed ? 'Signing in at your organisation did not work. Please try again.' : undefined;
  signInFailed = false;
  const next = `${location.pathname}${location.search}`;
  let fresh = offered?.ok === true ? offered.data : null;
  // The autofill waits for a passkey picked in the username field, until the page moves on or the
  // button's prompt replaces it; once the button's prompt ends without a sign-in, it is offered again.
  const autofill = async () => {
    if (!(await passkeyAutofillHere()) || mine !== generation) return;
    let options = fresh;
    fresh = null;
    if (options === null) {
      const again = await passkeyAuthenticationOptions();
      if (!again.ok || mine !== generation) return;
      options = again.data;
    }
    const failure = await passkeySignIn(options);
    if (failure !== null && mine === generation) view.passkeyFailed(failure);
  };
  const button = async () => {
    const failure = await passkeySignIn(null);
    if (failure !== null && mine === generation) void autofill();
    return failure;
  };
  const view = loginPage({
    notice,
    error,
    submit,
    methods: known,
    next,
    passkey: offered === null || passkeysOn === false ? undefined : button,
  });
  mount('Sign in', view.main);
  view.focus.focus();
  if (fresh !== null) void autofill();
}

async function submit(username: string, password: string): Promise<LoginFailure | null> {
  const result = await logIn(username, password);
  if (!result.ok) {
    const wrongPassword = result.status === 403 && !result.detail.startsWith('CSRF');
    return { message: loginErrorText(result), wrongPassword };
  }
  // The new csrftoken cookie is read again on the next POST (api.ts), since login rotates it.
  cancelPasskeyCeremony();
  user = result.data;
  offerPasskey = true;
  await showPage(true);
  return null;
}

/**
 * A passkey sign-in: by the button (`autofill` null: fresh options, the browser's prompt), or the
 * autofill's, which waits until the person picks a passkey in the username field. Resolves with the
 * failure to show, or null once signed in (or when the ceremony was replaced: nothing to say).
 */
async function passkeySignIn(
  autofill: Parameters<typeof signInWithOptions>[0] | null,
): Promise<LoginFailure | null> {
  const outcome = autofill === null ? await signInWithPasskey() : await signInWithOptions(autofill, true);
  if (outcome.kind === 'done') {
    user = outcome.data;
    await showPage(true);
    return null;
  }
  if (outcome.kind === 'browser') {
    // The autofill's ends are not the person's doing worth a word (no passkey here for this site
    // ends it at once): only the button's prompt says why it ended.
    const message = autofill === null ? passkeyRefusalText(outcome.refusal, false) : null;
    return message === null ? null : { message, wrongPassword: false };
  }
  if (outcome.failure.status === 404) passkeysOn = false;
  return { message: passkeyLoginErrorText(outcome.failure), wrongPassword: false };
}

async function signOut(button: HTMLButtonElement): Promise<void> {
  button.disabled = true;
  const result = await logOut();
  if (!result.ok) {
    // Still signed in (the server refused or could not be reached): say so where the page starts.
    button.disabled = false;
    const main = document.getElementById('main');
    main?.querySelector('.signout-error')?.remove();
    main?.prepend(
      h('p', { class: 'alert signout-error', role: 'alert' }, `Signing out failed. ${failureText(result)}`),
    );
    return;
  }
  user = null;
  history.pushState(null, '', '/');
  void showLogin('You have signed out.');
}

/** Ends one session from the sessions page; ending this device's is signing out (contract §9). */
async function endOne(session: SessionInfo, label: string, button: HTMLButtonElement): Promise<void> {
  button.disabled = true;
  const result = await endSession(session.id);
  if (result.ok || result.status === 404) {
    // 404: it had ended already (elsewhere, or expired); either way it is gone.
    if (session.current) return signedOut('You have signed out.');
    return showPage(true, `Signed out ${label}.`);
  }
  if (result.status === 403 && !result.detail.startsWith('CSRF')) return sessionEnded();
  button.disabled = false;
  announce(`Signing out ${label} failed. ${failureText(result)}`);
}

async function endAll(button: HTMLButtonElement): Promise<void> {
  button.disabled = true;
  const result = await logOutEverywhere();
  if (result.ok) return signedOut('You have signed out everywhere.');
  if (result.status === 403 && !result.detail.startsWith('CSRF')) return sessionEnded();
  button.disabled = false;
  announce(`Signing out everywhere failed. ${failureText(result)}`);
}

function announce(message: string): void {
  const status = document.getElementById('sessions-status');
  if (status !== null) status.textContent = message;
}

function signedOut(notice: string): void {
  user = null;
  history.pushState(null, '', '/');
  void showLogin(notice);
}

/**
 * contract §12: a sensitive change wants a sign-in within the last 10 minutes. This session ends and
 * the sign-in page comes up on the same address, so signing in brings the person back here.
 */
async function signInAgain(): Promise<void> {
  await logOut();
  user = null;
  void showLogin('Sign in again to change your passkeys.');
}

/** Says why a passkey change failed: a recent sign-in wanted, the session gone, or what went wrong. */
function passkeyChangeFailed(failure: Failure, what: string): void {
  if (needsRecentSignIn(failure)) {
    showPasskeyAlert(
      `${failure.detail} For your safety, changing your passkeys needs a sign-in within the last 10 minutes.`,
      () => void signInAgain(),
    );
  } else if (failure.status === 403 && !failure.detail.startsWith('CSRF')) {
    sessionEnded();
  } else if (failure.status === 404) {
    void showPage(true, `${what} did not work: that passkey is gone already.`);
  } else {
    const reason = failure.status === 400 && failure.detail !== '' ? failure.detail : failureText(failure);
    showPasskeyAlert(`${what} did not work. ${reason}`);
  }
}

/** The outcome of a creation ceremony as a sentence, after acting on what needs acting on. */
function creationText(
  outcome: PasskeyOutcome<PasskeyInfo>,
  onFailure: (failure: Failure) => void,
): string | null {
  if (outcome.kind === 'done') return `Passkey “${outcome.data.name}” created. Next time, sign in with it.`;
  if (outcome.kind === 'browser') return passkeyRefusalText(outcome.refusal, true);
  onFailure(outcome.failure);
  return null;
}

async function createOne(name: string, button: HTMLButtonElement): Promise<void> {
  button.disabled = true;
  const outcome = await createPasskeyHere(name);
  const text = creationText(outcome, (failure) => passkeyChangeFailed(failure, 'Creating the passkey'));
  if (outcome.kind === 'done') return showPage(true, text ?? undefined);
  button.disabled = false;
  if (text !== null) showPasskeyAlert(text);
}

async function renameOne(
  passkey: PasskeyInfo,
  name: string,
  done: (renamed: boolean) => void,
): Promise<void> {
  const result = await renamePasskey(passkey.id, name);
  done(result.ok);
  if (result.ok) return showPage(true, `Renamed “${passkey.name}” to “${name}”.`);
  passkeyChangeFailed(result, 'Renaming the passkey');
}

async function deleteOne(passkey: PasskeyInfo, button: HTMLButtonElement): Promise<void> {
  const question = `Delete the passkey “${passkey.name}”? You can no longer sign in with it, and the devices that signed in with it are signed out. It stays on your device until you remove it there.`;
  if (!window.confirm(question)) return;
  button.disabled = true;
  const result = await deletePasskey(passkey.id);
  if (!result.ok) {
    button.disabled = false;
    return passkeyChangeFailed(result, 'Deleting the passkey');
  }
  // contract §12: deleting a passkey ends the sessions that signed in with it, maybe this one.
  if ((await checkSession()).status === 403)
    return signedOut(`Deleted “${passkey.name}”. You had signed in with it here, so sign in again.`);
  return showPage(true, `Deleted “${passkey.name}”.`);
}

async function switchPasswordSignIn(on: boolean, input: HTMLInputElement): Promise<void> {
  input.disabled = true;
  const result = await setPasswordSignIn(on);
  if (result.ok) {
    const status = on
      ? 'Password sign-in is on: your mail password signs you in again.'
      : 'Password sign-in is off: sign in with a passkey from now on.';
    return showPage('password-sign-in', status);
  }
  input.checked = !on;
  input.disabled = false;
  passkeyChangeFailed(result, on ? 'Turning password sign-in on' : 'Turning password sign-in off');
}

/** Whether passkeys are on here, read once with the sign-in methods (`X-Passkeys`, contract §12). */
async function knowPasskeys(): Promise<void> {
  if (passkeysOn !== null) return;
  methods ??= signInMethods();
  passkeysOn = (await methods).passkeys;
}

const OFFER_KEY = 'clubhouse.passkey-offered:';

/** contract §12: the offer is made once per person on this browser, remembered across visits. */
function offerRemembered(username: string): boolean {
  try {
    return localStorage.getItem(OFFER_KEY + username) !== null;
  } catch {
    return true; // no storage (a privacy setting): better no offer than one on every sign-in
  }
}

function rememberOffer(username: string): void {
  try {
    localStorage.setItem(OFFER_KEY + username, new Date().toISOString());
  } catch {
    // Nothing to remember it in; offerRemembered says so the same way.
  }
}

/** After a password sign-in: above the page, the offer to create a passkey, when none exists yet. */
async function maybeOffer(main: HTMLElement, mine: number): Promise<void> {
  const username = user;
  if (username === null || !webAuthnHere() || passkeysOn !== true || offerRemembered(username)) return;
  const list = await listPasskeys();
  if (mine !== generation || !list.ok || list.data.length > 0) return;
  rememberOffer(username);
  const offer = passkeyOffer({
    create: (button, say) =>
      void createPasskeyHere(deviceLabel(navigator.userAgent)).then((outcome) => {
        const text = creationText(outcome, (failure) =>
          needsRecentSignIn(failure)
            ? say('Sign in again, then create a passkey on the Passkeys page.', false)
            : say(`Creating the passkey did not work. ${failureText(failure)}`, false),
        );
        if (text !== null) say(text, outcome.kind === 'done');
        else if (outcome.kind === 'browser') button.focus();
      }),
    dismiss: () => main.querySelector<HTMLElement>('h1')?.focus(),
  });
  main.querySelector('h1')?.after(offer);
}

function sessionEnded(): void {
  user = null;
  void showLogin('Your session has ended. Please sign in again.');
}

/**
 * Shows the page of the current address for the signed-in user; `focus` moves focus to its heading
 * (or, given an id, to that element), `status` is announced at the top of the sessions and passkeys
 * pages.
 */
async function showPage(focus: boolean | string, status?: string): Promise<void> {
  if (user === null) return showLogin();
  const mine = ++generation;
  const route = routeOf(location.pathname);
  await knowPasskeys();
  if (mine !== generation || user === null) return;
  const frame = loggedInFrame(user, (button) => void signOut(button), passkeysOn === true);
  const offer = offerPasskey && route.page !== 'passkeys';
  offerPasskey = false;
  const paint = (title: string, nodes: Node[]) => {
    frame.main.removeAttribute('aria-busy');
    frame.main.replaceChildren(...nodes);
    mount(title, ...frame.nodes);
    if (typeof focus === 'string') document.getElementById(focus)?.focus();
    else if (focus) frame.main.querySelector<HTMLElement>('h1')?.focus();
    if (offer) void maybeOffer(frame.main, mine);
  };
  if (route.page === 'unknown') return paint('Not found', notFoundPage('There is no page at this address.'));
  // The old page stays up while the request is out, unless it takes a moment.
  const slow = setTimeout(() => {
    if (mine !== generation) return;
    frame.main.setAttribute('aria-busy', 'true');
    frame.main.replaceChildren(
      loading(
        route.page === 'groups'
          ? 'Loading your groups…'
          : route.page === 'sessions'
            ? 'Loading where you are signed in…'
            : route.page === 'find'
              ? 'Searching the groups…'
              : route.page === 'passkeys'
                ? 'Loading your passkeys…'
                : 'Loading the group…',
      ),
    );
    mount('Loading', ...frame.nodes);
  }, 300);
  try {
    if (route.page === 'groups') {
      const result = await listGroups();
      if (mine !== generation) return;
      if (result.ok) paint('My groups', groupsPage(result.data));
      else showFailure(result, paint);
    } else if (route.page === 'sessions') {
      const result = await listSessions();
      if (mine !== generation) return;
      const actions = {
        end: (session: SessionInfo, label: string, button: HTMLButtonElement) =>
          void endOne(session, label, button),
        endAll: (button: HTMLButtonElement) => void endAll(button),
      };
      if (result.ok) paint('Where you’re signed in', sessionsPage(result.data, actions, status));
      else showFailure(result, paint);
    } else if (route.page === 'find') {
      const { query, result } = await runSearch(queryFromAddress(location.search));
      if (mine !== generation) return;
      if (result.ok) paint('Find a group', findGroupsPage(query, result.data, { sessionEnded }));
      else showFailure(result, paint);
    } else if (route.page === 'passkeys') {
      if (passkeysOn !== true)
        return paint('Not found', notFoundPage('Passkeys are not turned on for this service.'));
      const [list, settings] = await Promise.all([listPasskeys(), passkeySettings()]);
      if (mine !== generation) return;
      if (!list.ok) return showFailure(list, paint);
      if (!settings.ok) return showFailure(settings, paint);
      const data = {
        passkeys: list.data,
        settings: settings.data,
        canCreate: webAuthnHere(),
        userAgent: navigator.userAgent,
      };
      const actions = {
        create: (name: string, button: HTMLButtonElement) => void createOne(name, button),
        rename: (passkey: PasskeyInfo, name: string, done: (renamed: boolean) => void) =>
          void renameOne(passkey, name, done),
        remove: (passkey: PasskeyInfo, button: HTMLButtonElement) => void deleteOne(passkey, button),
        setPasswordSignIn: (on: boolean, input: HTMLInputElement) => void switchPasswordSignIn(on, input),
      };
      paint('Passkeys', passkeysPage(data, actions, status));
    } else {
      const result = await getGroup(route.id);
      if (mine !== generation) return;
      if (result.ok) paint(result.data.name, groupView(result.data, { username: user, sessionEnded }));
      else showFailure(result, paint);
    }
  } finally {
    clearTimeout(slow);
  }
}

function showFailure(failure: Failure, paint: (title: string, nodes: Node[]) => void): void {
  if (failure.status === 403) {
    // The session ended elsewhere (signed out in another tab, expired, revoked): sign in again here,
    // and the address still names the page to come back to.
    user = null;
    void showLogin('Your session has ended. Please sign in again.');
  } else if (failure.status === 404) {
    paint('Not found', notFoundPage('There is no group at this address.'));
  } else {
    paint(
      'Unavailable',
      unavailablePage(failureText(failure), () => void showPage(true)),
    );
  }
}

/** Follows same-origin links inside the app without a page load; anything else the browser handles. */
function onClick(event: MouseEvent): void {
  if (
    event.defaultPrevented ||
    event.button !== 0 ||
    event.metaKey ||
    event.ctrlKey ||
    event.shiftKey ||
    event.altKey
  ) {
    return;
  }
  const link = event.target instanceof Element ? event.target.closest('a') : null;
  if (link === null || link.target !== '' || link.hasAttribute('download') || link.origin !== location.origin)
    return;
  if (routeOf(link.pathname).page === 'unknown' || link.hash !== '') return;
  event.preventDefault();
  if (link.pathname !== location.pathname) history.pushState(null, '', link.pathname);
  void showPage(true);
}

async function start(): Promise<void> {
  // The hash form of a deep link becomes the path form, which the server also serves on reload.
  if (location.hash.startsWith('#/')) history.replaceState(null, '', location.hash.slice(1) || '/');
  // contract §10: said once, then gone from the address (a reload does not say it again).
  const query = new URLSearchParams(location.search);
  if (query.get('signin') === 'failed') {
    signInFailed = true;
    query.delete('signin');
    const rest = query.toString();
    history.replaceState(null, '', `${location.pathname}${rest === '' ? '' : `?${rest}`}${location.hash}`);
  }
  const result = await checkSession();
  if (result.ok) {
    user = result.data;
  } else if (result.status === 403) {
    user = null;
  } else {
    generation++;
    const main = h('main', { id: 'main', class: 'page page-centered' });
    main.append(...unavailablePage(failureText(result), () => void start()));
    mount('Unavailable', main);
    return;
  }
  await showPage(false);
}

document.addEventListener('click', onClick);
window.addEventListener('popstate', () => void showPage(true));
void start();
