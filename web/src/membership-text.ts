// What the pages of contract §13 say in words: the outcome of a join, leave or administrator's
// action, and why one was refused.
import { type Failure, failureText } from './text.ts';

/** contract §3: the 403 of a request whose session is gone (ended elsewhere, expired, revoked). */
export function sessionGone(failure: Failure): boolean {
  return failure.status === 403 && failure.detail === 'Authentication credentials were not provided.';
}

/**
 * The sentence for a refused write of §13. A 409 carries the contract's own words (the last
 * administrator; a directory-managed group), so they are shown as they are.
 */
export function actionFailureText(failure: Failure): string {
  switch (failure.status) {
    case 409:
      return failure.detail !== '' ? failure.detail : 'That change is not possible right now.';
    case 403:
      return failure.detail.startsWith('CSRF')
        ? 'Your browser’s request was refused for safety. Reload the page and try again.'
        : 'Only an administrator of this group can do that, and you are not one (any more).';
    case 404:
      return 'That group or person is not known here (any more). The page now shows what is.';
    default:
      return failureText(failure);
  }
}

/** "1 group", "12 groups"; `kind` names what is counted. */
export function countOf(count: number, one: string, many: string): string {
  return `${count.toLocaleString()} ${count === 1 ? one : many}`;
}
