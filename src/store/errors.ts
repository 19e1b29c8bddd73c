// The store's own errors: a store that cannot answer now, and data that conflicts with what is
// stored. The HTTP layer turns the first into a 503 (contract §2), the import and the CLI name the
// second's entries (contract §4).

/** A store (database, Redis) could not answer; the API says 503 with Retry-After. */
export class StoreUnavailableError extends Error {
  override readonly name = 'StoreUnavailableError';
  readonly store: string;
  constructor(store: string, options?: { cause?: unknown }) {
    super(`${store} unavailable`, options);
    this.store = store;
  }
}

// What a store answers when valid-looking data conflicts with what is stored (contract §4: a name
// taken, a group missing, an id in use). Every message is written once, here; the import names the
// entry by its JSON path, the CLI shows the reason.

export interface ImportProblem {
  /** JSON path of the bad entry or field, e.g. `groups[1].type`. */
  readonly path: string;
  readonly reason: string;
}

/** Raised by a store when valid-looking data conflicts with what is stored; nothing was written. */
export class ImportConflictError extends Error {
  override readonly name = 'ImportConflictError';
  readonly problems: ImportProblem[];
  constructor(problems: ImportProblem[]) {
    super(problems.map((p) => `${p.path}: ${p.reason}`).join('; '));
    this.problems = problems;
  }
}

/** The reasons, one wording each. */
export const CONFLICT = {
  nameTaken: (name: string) => `"${name}" is already the name of another group`,
  noSuchGroup: (id: number) => `no group with id ${id}`,
  idTaken: (id: number) => `group ${id} exists already (use group update)`,
  noFreeId: (max: number) => `every group id from 1 to ${max} is in use`,
} as const;

/** One conflict at `path`, ready to throw. */
export const conflict = (path: string, reason: string) => new ImportConflictError([{ path, reason }]);

/** A lease-guarded write found its lease gone (expired, taken by another instance); nothing was written. */
export class LeaseLostError extends Error {
  override readonly name = 'LeaseLostError';
  constructor(lease: string) {
    super(`the ${lease} lock was lost before the write (another instance may hold it now)`);
  }
}
