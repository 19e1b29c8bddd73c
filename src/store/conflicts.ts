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
  noFreeId: (max: number) => `the largest group id (${max}) is in use: give a free one with --id`,
} as const;

/** One conflict at `path`, ready to throw. */
export const conflict = (path: string, reason: string) => new ImportConflictError([{ path, reason }]);
