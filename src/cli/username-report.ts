// What `clubhouse config check` says of the stored usernames (contract §3): every name that is not
// canonical under USERNAME_CASE's profile, until an administrator resolves it (`clubhouse user
// merge`, whose command each warning prints).
import { findingText, storedCanonicalizer } from '../auth/username-migration.ts';
import type { Config } from '../config/config.ts';
import { openDatabase } from '../store/open.ts';
import type { UsernameFinding } from '../store/types.ts';

export type UsernameReport =
  | { readonly checked: true; readonly findings: readonly UsernameFinding[] }
  | { readonly checked: false; readonly reason: string };

/**
 * Reads the stored usernames without changing anything: the database is not migrated, a SQLite
 * file that does not exist is not created (nothing is stored there yet), and a database that
 * cannot be read is reported as not checked rather than failing the whole check.
 */
export async function storedUsernameReport(config: Config): Promise<UsernameReport> {
  let database: Awaited<ReturnType<typeof openDatabase>> = null;
  try {
    database = await openDatabase(config.store, { migrate: false, existing: true });
    if (database === null) return { checked: true, findings: [] };
    return {
      checked: true,
      findings: await database.usernames.nonCanonical(storedCanonicalizer(config.usernameCase)),
    };
  } catch (err) {
    return { checked: false, reason: (err as Error).message };
  } finally {
    await database?.close();
  }
}

/** The warnings of a report: one per stored name that is not canonical. */
export function usernameWarnings(report: UsernameReport): string[] {
  if (!report.checked) return [];
  return report.findings.map((finding) => `stored username ${findingText(finding, false)}.`);
}
