// A registry of the secrets tests use (passwords, session ids, CSRF tokens) and of the log lines they
// capture, so test/ops/secrets.test.ts can prove no secret ever reaches any output of a suite run.
// Both are files named by environment variables; without them, nothing is recorded.
import { appendFileSync } from 'node:fs';

const SECRETS_FILE = process.env['CLUBHOUSE_SECRETS_FILE'];
const LOG_DUMP = process.env['CLUBHOUSE_LOG_DUMP'];

/**
 * Notes secrets this test used, one per line. Values under 8 characters are skipped: passwords such
 * as "wrong" or "pw" are also ordinary words in test names, so finding them proves nothing.
 */
export function recordSecrets(...values: string[]): void {
  if (SECRETS_FILE === undefined) return;
  const lines = values.filter((value) => value.length >= 8 && !value.includes('\n'));
  if (lines.length > 0) appendFileSync(SECRETS_FILE, `${lines.join('\n')}\n`);
}

/** Keeps what a service wrote (captured log lines, a child's output) for the secrets scan. */
export function dumpOutput(text: string): void {
  if (LOG_DUMP === undefined || text === '') return;
  appendFileSync(LOG_DUMP, text.endsWith('\n') ? text : `${text}\n`);
}
