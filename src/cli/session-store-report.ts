// What `clubhouse config check` says of the Redis that holds the sessions (SESSION_STORE): whether its
// maxmemory-policy would evict sessions and throttle counters (then the service does not start), and
// whether it publishes the keyspace events the session memory needs (else the memory stays off and
// Redis answers every session: docs/freshness.md). It reads, and changes nothing.
import type { Config } from '../config/config.ts';

/** The warnings about the sessions' Redis; none without one. */
export async function sessionStoreWarnings(config: Config): Promise<string[]> {
  const sessions = config.store.sessions;
  if (sessions === null) return [];
  const { redisReport } = await import('../store/redis/store.ts');
  const report = await redisReport(sessions.target);
  if (!report.checked) return [`SESSION_STORE not checked: ${report.reason}.`];
  const warnings: string[] = [];
  if (report.evicts !== null) warnings.push(`SESSION_STORE: ${report.evicts}; the server will not start.`);
  if (report.missingEvents === null)
    warnings.push(
      'SESSION_STORE refuses CONFIG: its maxmemory-policy must be noeviction, and notify-keyspace-events must include K, g, h, x and e (e.g. Kghxe) for sessions to be answered from memory.',
    );
  else if (report.missingEvents !== '')
    warnings.push(
      `SESSION_STORE's notify-keyspace-events lacks ${report.missingEvents}: the server adds it at start-up (sessions are answered by Redis alone where it cannot).`,
    );
  return warnings;
}
