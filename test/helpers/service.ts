// Runs clubhouse as its own process (`node src/main.ts`) for tests and benchmarks. It listens on
// port 0 and reports the address it got, so parallel test files never race for a port.
import { type ChildProcess, spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { dumpOutput } from './secrets.ts';

export interface ServiceProcess {
  readonly child: ChildProcess;
  readonly url: string;
  readonly port: number;
  /** Everything the process wrote so far (stdout and stderr). */
  output(): string;
}

const MAIN = fileURLToPath(new URL('../../src/main.ts', import.meta.url));

/**
 * Starts `src/main.ts` (or `npm start` with `viaNpm`) with these settings and resolves once it
 * serves. LOG_LEVEL must let the info line "clubhouse is serving" through; it is info unless the
 * caller asks for debug. ACCESS_LOG is on unless the caller says otherwise, so that the secrets scan
 * sees every request's line.
 */
export function startService(
  env: Record<string, string>,
  options: { viaNpm?: boolean; timeoutMs?: number } = {},
): Promise<ServiceProcess> {
  const [file, args] =
    options.viaNpm === true
      ? ['npm', ['start', '--silent']]
      : [process.execPath, ['--disable-warning=ExperimentalWarning', MAIN]];
  const child = spawn(file, args, {
    cwd: fileURLToPath(new URL('../..', import.meta.url)),
    env: {
      ...process.env,
      PORT: '0',
      ACCESS_LOG: 'true',
      ...env,
      LOG_LEVEL: env['LOG_LEVEL'] === 'debug' ? 'debug' : 'info',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  // Everything the service prints also goes to the secrets scan (test/ops/secrets.test.ts).
  child.stderr?.on('data', (chunk) => {
    output += chunk;
    dumpOutput(String(chunk));
  });
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`clubhouse did not start:\n${output}`));
    }, options.timeoutMs ?? 60_000);
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`clubhouse exited with ${code} before serving:\n${output}`));
    });
    const lines = createInterface({ input: child.stdout! });
    lines.on('line', (line) => {
      output += `${line}\n`;
      dumpOutput(line);
      if (output.length > 1_000_000) output = output.slice(-500_000);
      const url = /"msg":"clubhouse is serving"/.test(line)
        ? (JSON.parse(line) as { url?: string }).url
        : undefined;
      if (url === undefined) return;
      clearTimeout(timer);
      child.removeAllListeners('exit');
      resolve({ child, url, port: Number(new URL(url).port), output: () => output });
    });
  });
}
