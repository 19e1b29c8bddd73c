// contract §13: "Find a group" (`/groups`). A search over every group by name and descriptions, with
// a type filter, run as people type (debounced) and paged as the API pages (50 by name). The address
// keeps the search (`/groups?q=chess&type=0&page=2`), so a reload, a shared link and Back all show
// the same results; a stale answer never paints over a newer one.
import type { ApiResult, GroupType } from './api.ts';
import { h } from './dom.ts';
import {
  type FoundGroup,
  type GroupPage,
  type GroupQuery,
  PAGE_SIZE,
  queryString,
  searchGroups,
} from './groups-api.ts';
import { countOf, sessionGone } from './membership-text.ts';
import { failureText, memberStatusLabel } from './text.ts';
import { pageHeading, typeBadge } from './views.ts';

/** Typing pauses this long before the search goes out: one request per word, not per key. */
const DEBOUNCE_MS = 300;
/** The API's bound on `q`, in characters (a group's name is at most 200: a longer text finds nothing). */
const MAX_QUERY_LENGTH = 200;

/** What the page needs from the app. */
export interface FindEnv {
  /** The session ended while the page was open: sign in again. */
  readonly sessionEnded: () => void;
}

/** The type filter's value as the API's `type`; anything else is both kinds. */
function typeOf(value: string | null): GroupType | null {
  return value === '0' ? 0 : value === '1' ? 1 : null;
}

/** The search the address names (`?q=&type=&page=`); anything unreadable is left at its default. */
export function queryFromAddress(search: string): GroupQuery {
  const params = new URLSearchParams(search);
  const page = Number(params.get('page') ?? '1');
  return {
    q: [...(params.get('q') ?? '')].slice(0, MAX_QUERY_LENGTH).join(''),
    type: typeOf(params.get('type')),
    page: Number.isSafeInteger(page) && page >= 1 ? page : 1,
  };
}

/**
 * Runs a search; a page past the end (DRF answers 404, e.g. an old link after groups were removed)
 * falls back to the first page. Resolves with the query that was answered.
 */
export async function runSearch(
  query: GroupQuery,
): Promise<{ query: GroupQuery; result: ApiResult<GroupPage> }> {
  const result = await searchGroups(query);
  if (!result.ok && result.status === 404 && query.page > 1) {
    const first = { ...query, page: 1 };
    return { query: first, result: await searchGroups(first) };
  }
  return { query, result };
}

/** The page, showing `first` (the answer to `query`), and searching again as the form changes. */
export function findGroupsPage(query: GroupQuery, first: GroupPage, env: FindEnv): Node[] {
  let current = query;
  let sequence = 0;
  let timer: ReturnType<typeof setTimeout> | undefined;

  const input = h('input', {
    id: 'group-search',
    name: 'q',
    type: 'search',
    autocomplete: 'off',
    spellcheck: 'false',
    maxlength: MAX_QUERY_LENGTH,
    'aria-describedby': 'group-search-hint',
  });
  input.value = query.q;
  const type = h(
    'select',
    { id: 'group-type', name: 'type' },
    h('option', { value: '' }, 'All types'),
    h('option', { value: '0' }, 'Groups'),
    h('option', { value: '1' }, 'Classrooms'),
  );
  type.value = query.type === null ? '' : String(query.type);
  const form = h(
    'form',
    { class: 'search-form', role: 'search', 'aria-label': 'Find a group' },
    h(
      'div',
      { class: 'field search-field' },
      h('label', { for: 'group-search' }, 'Search'),
      input,
      h(
        'p',
        { id: 'group-search-hint', class: 'hint' },
        'Names and descriptions; accents and case do not matter.',
      ),
    ),
    h('div', { class: 'field' }, h('label', { for: 'group-type' }, 'Type'), type),
    h('button', { type: 'submit', class: 'button' }, 'Search'),
  );
  // role=status: the count is announced whenever a search answers; focus comes here after paging.
  const status = h('p', { id: 'search-status', class: 'search-status', role: 'status', tabindex: '-1' });
  const list = h('ul', { class: 'group-list', role: 'list', 'aria-labelledby': 'search-status' });
  const previous = h('button', { type: 'button', class: 'button button-secondary' }, 'Previous page');
  const next = h('button', { type: 'button', class: 'button button-secondary' }, 'Next page');
  const where = h('span', { class: 'pager-where' });
  const pager = h('nav', { class: 'pager', 'aria-label': 'Result pages' }, previous, where, next);

  const show = (answered: GroupQuery, page: GroupPage) => {
    current = answered;
    const pages = Math.max(1, Math.ceil(page.count / PAGE_SIZE));
    const found =
      page.count === 0
        ? answered.q === ''
          ? 'There are no groups of this type yet.'
          : `No group matches “${answered.q}”.`
        : `${countOf(page.count, 'group', 'groups')} found.`;
    status.textContent = pages > 1 ? `${found} Page ${answered.page} of ${pages}.` : found;
    status.classList.remove('alert');
    list.replaceChildren(...page.results.map(resultCard));
    where.textContent = `Page ${answered.page} of ${pages}`;
    previous.disabled = page.previous === null;
    next.disabled = page.next === null;
    pager.hidden = pages <= 1;
  };

  const search = async (wanted: GroupQuery, after: 'replace' | 'push', focusStatus: boolean) => {
    clearTimeout(timer);
    const mine = ++sequence;
    list.setAttribute('aria-busy', 'true');
    const { query: answered, result } = await runSearch(wanted);
    // A newer search went out, or the person left the page: this answer is for nobody.
    if (mine !== sequence || !list.isConnected) return;
    list.removeAttribute('aria-busy');
    if (!result.ok) {
      if (sessionGone(result)) return env.sessionEnded();
      status.textContent = `The search did not work. ${failureText(result)}`;
      status.classList.add('alert');
      return;
    }
    const address = `/groups${queryString(answered)}`;
    if (address !== `${location.pathname}${location.search}`) {
      if (after === 'push') history.pushState(null, '', address);
      else history.replaceState(null, '', address);
    }
    show(answered, result.data);
    if (focusStatus) status.focus();
  };

  const fromForm = (): GroupQuery => ({
    q: input.value.trim(),
    type: typeOf(type.value),
    page: 1,
  });
  input.addEventListener('input', () => {
    clearTimeout(timer);
    timer = setTimeout(() => {
      const wanted = fromForm();
      if (wanted.q !== current.q || wanted.type !== current.type) void search(wanted, 'replace', false);
    }, DEBOUNCE_MS);
  });
  type.addEventListener('change', () => void search(fromForm(), 'replace', false));
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    void search(fromForm(), 'replace', false);
  });
  // Pages are history entries (Back returns to the page before); focus goes to the new count.
  previous.addEventListener('click', () => void search({ ...current, page: current.page - 1 }, 'push', true));
  next.addEventListener('click', () => void search({ ...current, page: current.page + 1 }, 'push', true));

  show(query, first);
  return [
    pageHeading('Find a group'),
    h('p', { class: 'lead' }, 'Search every group and classroom, then open one to ask to join.'),
    h('div', { class: 'card' }, form),
    status,
    list,
    pager,
  ];
}

function resultCard(group: FoundGroup): HTMLElement {
  const status = group.member_status;
  return h(
    'li',
    { class: 'card group-card' },
    h('h2', { class: 'group-name' }, h('a', { href: `/group/${group.id}` }, group.name)),
    h(
      'p',
      { class: 'badges' },
      typeBadge(group.type),
      status < 0 ? null : h('span', { class: `badge badge-status-${status}` }, memberStatusLabel(status)),
    ),
    group.short_description === ''
      ? null
      : h('p', { class: 'group-summary' }, `To join: ${group.short_description}`),
  );
}
