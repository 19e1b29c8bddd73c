// A paged search (RFC 2696) of the group sync's own, through the frame guard (frame-guard.ts: the
// same vetting as ldapts's answers, which then go here instead of to ldapts) and read by
// search-ber.ts. ldapts still writes the request (its filter parser and encoders) and still binds;
// it only no longer reads the entries, which was most of the sync's client CPU (search-ber.ts).
// One page at a time on a connection: OpenLDAP keeps one paged search per connection, and answers
// a second one's next page with protocolError ("paged results cookie is invalid", measured), so
// searches that should overlap go on connections of their own (reader.ts).
import { FilterParser, PagedResultsControl, SearchRequest } from 'ldapts';
import { type Element, OP, readResult } from '../ber.ts';
import { LdapFailure, outOfProtocol, resultCodeFailure } from '../errors.ts';
import type { FrameGuard } from '../frame-guard.ts';
import { readPagedCookie } from './search-ber.ts';

export interface PagedSearch {
  readonly base: string;
  /** An RFC 4515 filter. */
  readonly filter: string;
  readonly attributes: readonly string[];
  readonly pageSize: number;
}

/** A SearchResultEntry as answered: the message, and the entry's element in it (search-ber.ts reads it). */
type OnEntry = (frame: Buffer, op: Element) => void;

/** One page: the request, every entry handed to `onEntry` as it arrives, and the next page's cookie. */
function page(
  guard: FrameGuard,
  search: PagedSearch,
  filter: ReturnType<typeof FilterParser.parseString>,
  cookie: Buffer,
  onEntry: OnEntry,
): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    let settled = false;
    const fail = (err: unknown) => {
      settled = true;
      reject(err instanceof LdapFailure ? err : outOfProtocol(`search: ${String(err)}`));
    };
    const answer = (frame: Buffer, op: Element) => {
      if (settled) return;
      try {
        if (op.tag === OP.searchResultEntry) return onEntry(frame, op);
        // References are not followed (RFC 4511 §4.5.3); the guard allows nothing else but the done.
        if (op.tag !== OP.searchResultDone) return;
        const result = readResult(frame, op);
        if (!result.ok) return fail(outOfProtocol(`malformed LDAPResult: ${result.reason}`));
        if (result.value.code !== 0) return fail(resultCodeFailure(result.value.code));
        const next = readPagedCookie(frame, op);
        if (!next.ok) return fail(outOfProtocol(`search done: ${next.reason}`));
        settled = true;
        resolve(next.value);
      } catch (err) {
        // An answer handler runs in the socket's data event: nothing may escape it.
        fail(err);
      }
    };
    guard.send(
      (messageId) =>
        new SearchRequest({
          messageId,
          baseDN: search.base,
          scope: 'sub',
          filter,
          attributes: [...search.attributes],
          controls: [new PagedResultsControl({ value: { size: search.pageSize, cookie } })],
        }).write(),
      answer,
    );
  });
}

/**
 * Every entry of the search, page after page, to `onEntry` as each arrives; resolves after the last
 * page. A page whose result is not success fails the search (and a partial list is never complete).
 */
export async function pagedSearch(guard: FrameGuard, search: PagedSearch, onEntry: OnEntry): Promise<void> {
  const filter = FilterParser.parseString(search.filter);
  let cookie: Buffer = Buffer.alloc(0);
  do cookie = await page(guard, search, filter, cookie, onEntry);
  while (cookie.length > 0);
}
