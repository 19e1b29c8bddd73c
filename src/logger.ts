// JSON-line logs (contract §6) with every place a secret could sit redacted.
import { type DestinationStream, type Logger, pino } from 'pino';
import type { LogLevel } from './config/config.ts';

/** Paths pino blanks out, whatever a log call passes in. */
const REDACT_PATHS = [
  'password',
  '*.password',
  'req.headers.cookie',
  'req.headers.authorization',
  'req.headers["x-csrftoken"]',
  'res.headers["set-cookie"]',
  'headers.cookie',
  'headers["set-cookie"]',
  'headers["x-csrftoken"]',
  'sessionId',
  '*.sessionId',
  'csrfToken',
];

/** The service's logger; `destination` lets tests capture every line. */
export function createLogger(level: LogLevel, destination?: DestinationStream): Logger {
  return pino({ level, redact: { paths: REDACT_PATHS, censor: '[redacted]' } }, destination);
}
