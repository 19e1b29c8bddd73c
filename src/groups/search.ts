// Finding a group (contract §13: GET /api/groups?q=TEXT&type=0|1&page=N): the query's parameters
// checked as Django REST framework and django-filter check them, the search asked of the store, and
// the answer in DRF's page shape (PageNumberPagination: count, next, previous, results; 50 a page).
import { codePointLength } from '../auth/username.ts';
import type { GroupSearchHit, GroupStore, GroupType } from '../store/group-types.ts';
import { foldForSearch } from '../store/search-text.ts';
import { unstorableText } from './import-fields.ts';

/** contract §13: 50 groups a page. */
export const SEARCH_PAGE_SIZE = 50;
/** The longest `q`, in code points (a group's name is at most 200). */
export const SEARCH_QUERY_MAX_LENGTH = 200;

interface SearchPage {
  readonly count: number;
  readonly next: string | null;
  readonly previous: string | null;
  readonly results: readonly GroupSearchHit[];
}

/** The search's answer: a page, field errors (400), or DRF's "Invalid page." (404). */
export type SearchOutcome =
  | { readonly kind: 'page'; readonly page: SearchPage }
  | { readonly kind: 'invalid'; readonly fields: Record<string, string[]> }
  | { readonly kind: 'invalid-page' };

/** A query parameter as Django's QueryDict.get reads it: the last of its values; null when absent. */
const lastValue = (params: URLSearchParams, name: string): string | null =>
  params.getAll(name).at(-1) ?? null;

/**
 * DRF's link to another page: this request's absolute URL with `page` set (or, for page 1, removed),
 * the parameters sorted as its replace_query_param leaves them.
 */
function pageLink(base: string, params: URLSearchParams, page: number): string {
  const query = new URLSearchParams();
  const names = [...new Set(params.keys())].filter((name) => name !== 'page').sort();
  const entries: [string, string][] = names.flatMap((name) =>
    params.getAll(name).map((v) => [name, v] as [string, string]),
  );
  if (page > 1) entries.push(['page', String(page)]);
  entries.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  for (const [name, value] of entries) query.append(name, value);
  const text = query.toString();
  return text === '' ? base : `${base}?${text}`;
}

/**
 * One page of every group matching `params` (q, type, page), with `username`'s member_status.
 * `base` is the request's absolute URL without its query, for the page links.
 */
export async function searchGroups(
  store: GroupStore,
  username: string,
  params: URLSearchParams,
  base: string,
): Promise<SearchOutcome> {
  const fields: Record<string, string[]> = {};
  const q = lastValue(params, 'q') ?? '';
  if (codePointLength(q) > SEARCH_QUERY_MAX_LENGTH) {
    fields['q'] = [`Ensure this field has no more than ${SEARCH_QUERY_MAX_LENGTH} characters.`];
  } else if (unstorableText(q) !== null) {
    fields['q'] = ['Enter a valid value.'];
  }
  const typeText = lastValue(params, 'type') ?? '';
  let type: GroupType | null = null;
  // django-filter's ChoiceFilter: an empty value filters nothing; anything but a choice is an error.
  if (typeText === '0' || typeText === '1') type = Number(typeText) as GroupType;
  else if (typeText !== '') {
    fields['type'] = [`Select a valid choice. ${typeText} is not one of the available choices.`];
  }
  if (Object.keys(fields).length > 0) return { kind: 'invalid', fields };
  // DRF: no page (or an empty one) is page 1; anything but a positive whole number is invalid.
  const pageText = lastValue(params, 'page') || '1';
  if (!/^[0-9]{1,9}$/.test(pageText) || Number(pageText) < 1) return { kind: 'invalid-page' };
  const page = Number(pageText);
  const found = await store.search({
    username,
    text: foldForSearch(q),
    type,
    offset: (page - 1) * SEARCH_PAGE_SIZE,
    limit: SEARCH_PAGE_SIZE,
  });
  // Past the last page: DRF's 404, except page 1 of nothing, which is an empty page.
  if (found.count === null) return { kind: 'invalid-page' };
  const last = Math.max(1, Math.ceil(found.count / SEARCH_PAGE_SIZE));
  return {
    kind: 'page',
    page: {
      count: found.count,
      next: page < last ? pageLink(base, params, page + 1) : null,
      previous: page > 1 ? pageLink(base, params, page - 1) : null,
      results: found.results,
    },
  };
}
