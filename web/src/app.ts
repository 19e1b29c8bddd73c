// The clubhouse web client: asks /api/auth/check who is signed in, then shows the login form or the
// page the address names (`/`, `/group/7`, or the hash form `/#/group/7`), and keeps the address
// and the page in step as people click, go back, sign in and sign out.
import {
  checkSession,
  endSession,
  getGroup,
  listGroups,
  listSessions,
  logIn,
  logOut,
  logOutEverywhere,
  type SessionInfo,
  type SignInMethods,
  signInMethods,
} from './api.ts';
import { h } from './dom.ts';
import { findGroupsPage, queryFromAddress, runSearch } from './find-groups.ts';
import { groupView } from './group-page.ts';
import { sessionsPage } from './sessions-view.ts';
import { type Failure, failureText, loginErrorText } from './text.ts';
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
  | { readonly page: 'group'; readonly id: number }
  | { readonly page: 'unknown' };

const GROUP_PATH = /^\/group\/(\d{1,10})\/?$/;

function routeOf(path: string): Route {
  if (path === '/' || path === '') return { page: 'groups' };
  if (path === '/sessions' || path === '/sessions/') return { page: 'sessions' };
  if (path === '/groups' || path === '/groups/') return { page: 'find' };
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

function mount(title: string, ...nodes: Node[]): void {
  document.title = `${title} · clubhouse`;
  root.replaceChildren(...nodes);
}

async function showLogin(notice?: string): Promise<void> {
  const mine = ++generation;
  methods ??= signInMethods();
  const known = await methods;
  if (mine !== generation) return;
  const error = signInFailed ? 'Signing in at your organisation did not work. Please try again.' : undefined;
  signInFailed = false;
  const next = `${location.pathname}${location.search}`;
  const { main, focus } = loginPage({ notice, error, submit, methods: known, next });
  mount('Sign in', main);
  focus.focus();
}

async function submit(username: string, password: string): Promise<LoginFailure | null> {
  const result = await logIn(username, password);
  if (!result.ok) {
    const wrongPassword = result.status === 403 && !result.detail.startsWith('CSRF');
    return { message: loginErrorText(result), wrongPassword };
  }
  // The new csrftoken cookie is read again on the next POST (api.ts), since login rotates it.
  user = result.data;
  await showPage(true);
  return null;
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

function sessionEnded(): void {
  user = null;
  void showLogin('Your session has ended. Please sign in again.');
}

/**
 * Shows the page of the current address for the signed-in user; `focus` moves focus to its heading,
 * `status` is announced at the top of the sessions page.
 */
async function showPage(focus: boolean, status?: string): Promise<void> {
  if (user === null) return showLogin();
  const mine = ++generation;
  const route = routeOf(location.pathname);
  const frame = loggedInFrame(user, (button) => void signOut(button));
  const paint = (title: string, nodes: Node[]) => {
    frame.main.removeAttribute('aria-busy');
    frame.main.replaceChildren(...nodes);
    mount(title, ...frame.nodes);
    if (focus) frame.main.querySelector<HTMLElement>('h1')?.focus();
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
