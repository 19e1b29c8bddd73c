// The data limits of contract §4, in one place: the API schemas (routes/*-schemas.ts), the import and CLI
// validation (groups/import-fields.ts, cli/group-commands.ts) read them here, and
// test/store/contract.test.ts proves that the migrated database of every store enforces exactly
// these numbers (a change here without a migration fails that test).

/** Largest group id (contract §4: 1 to 2^31−1; a path id above it is simply not found, §3). */
export const MAX_GROUP_ID = 2_147_483_647;

/** Longest canonical username, in code points (the login form's limit too, contract §3). */
export const USERNAME_MAX_LENGTH = 150;

/** Longest text of each group field, in code points (contract §4). A name is also non-empty. */
export const GROUP_LIMITS = {
  name: 200,
  description: 10_000,
  short_description: 500,
  activities: 10_000,
} as const;
