// What `clubhouse config check` says of the Redis that holds the sessions (SESSION_STORE): whether its
// maxmemory-policy would evict sessions and throttle counters (then the service does not start), and
// whether it publishes the keyspace events the session memory needs (else the memory stays off and
// Redis answers every session: docs/freshness.md). It reads, and changes nothing; a Redis it cannot
// reach is reported as not checked, as the stored usernames are.
import type { Config } from '../config/config.ts';
import type { RedisReport } from '../store/redis/store.ts';

/** The report on the sessions' Redis; null without one. */
export async function sessionStoreReport(config: Config): Promise<RedisReport | null> {
  const sessions = config.store.sessions;
  if (sessions === null) return null;
  const { redisReport } = await import('../store/redis/store.ts');
  return redisReport(sessions.target);
}

/** The warnings of a report: an evicting policy, keyspace events missing or not known. */
export function sessionStoreWarnings(report: RedisReport | null): string[] {
  if (report === null || !report.checked) return [];
  const warnings: string[] = [];
  if (report.evicts !== null) warnings.push(`SESSION_STORE: ${report.evicts}; the server will not start.`);
  if (report.missingEvents === null)
    warnings.push(
      'SESSION_STORE refuses CONFIG: its maxmemory-policy must be noeviction, and notify-keyspace-events must include K, g, h, x and e (e.g. Kghxe) for sessions to be answered from memory.',
    );
  else if (report.missingEvents !== '')
    warnings.push(
      `SESSION_STORE's notify-keyspace-events lacks ${report.missingEvents}: the server adds it at start-up (where Redis refuses, sessions are answered by Redis alone).`,
    );
  return warnings;
}
