// What the baseline answers: clubhouse's own responses to the loaded requests, recorded once at
// start (status, every header as sent, body), so that the baseline sends the same bytes with no
// per-request work, and the ratio measures only what clubhouse does to compute them.

import { readFileSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import type { Server } from './servers.ts';

/** The requests the wrk scripts send, and the baseline's route for each. */
export type Route = 'check' | 'check-anonymous' | 'group-list' | 'group-detail' | 'not-found';

export interface Answer {
  readonly status: number;
  /** Flat [name, value, …] as res.writeHead takes them; node's own (Date, Connection…) left out. */
  readonly headers: string[];
  readonly body: string;
}

export type Answers = Record<Route, Answer>;

// Headers node:http writes by itself on either server.
const NODE_OWN = new Set(['date', 'connection', 'keep-alive', 'transfer-encoding']);

interface Raw {
  readonly status: number;
  readonly rawHeaders: string[];
  readonly body: string;
}

function get(url: string, cookie: string | null, agent?: http.Agent): Promise<Raw> {
  return new Promise((resolve, reject) => {
    const headers = cookie === null ? {} : { cookie };
    const request = http.get(url, { headers, ...(agent === undefined ? {} : { agent }) }, (response) => {
      const chunks: Buffer[] = [];
      response.on('data', (chunk: Buffer) => chunks.push(chunk));
      response.on('end', () =>
        resolve({
          status: response.statusCode ?? 0,
          rawHeaders: response.rawHeaders,
          body: Buffer.concat(chunks).toString('utf8'),
        }),
      );
      response.on('error', reject);
    });
    request.on('error', reject);
  });
}

/** The path and cookie of each route, for the first session of the load file. */
function requests(loadFile: string): Record<Route, [string, string | null]> {
  const [id, group] = readFileSync(loadFile, 'utf8').split('\n', 1)[0]!.split(' ');
  const cookie = `sessionid=${id}`;
  return {
    check: ['/api/auth/check', cookie],
    'check-anonymous': ['/api/auth/check', null],
    'group-list': ['/api/group/', cookie],
    'group-detail': [`/api/group/${group}`, cookie],
    'not-found': ['/api/nothing-here', cookie],
  };
}

const pairs = (flat: readonly string[]) =>
  Array.from({ length: flat.length / 2 }, (_, i) => [flat[2 * i]!, flat[2 * i + 1]!] as const);

/** Records clubhouse's answers for the session of `loadFile` into `file` (JSON) and returns them. */
export async function recordAnswers(clubhouse: Server, loadFile: string, file: string): Promise<Answers> {
  const answers = {} as Answers;
  for (const [route, [urlPath, cookie]] of Object.entries(requests(loadFile)) as [
    Route,
    [string, string | null],
  ][]) {
    const raw = await get(`${clubhouse.url}${urlPath}`, cookie);
    const headers = pairs(raw.rawHeaders)
      .filter(([name]) => !NODE_OWN.has(name.toLowerCase()))
      .flat();
    answers[route] = { status: raw.status, headers, body: raw.body };
  }
  writeFileSync(file, JSON.stringify(answers));
  return answers;
}

/** One session's own answer bodies: check, the group list, and the detail of each of its user's groups. */
interface OwnAnswers {
  readonly check: string;
  readonly list: string;
  /** By group id, as the detail's path has it. */
  readonly details: Readonly<Record<string, string>>;
}

/** Each session of the load file (its raw id) to its own answers. */
export type SessionAnswers = Readonly<Record<string, OwnAnswers>>;

/** Requests at once while recording every session's answers. */
const RECORDING_CONCURRENCY = 16;

/**
 * Records, for every session of `loadFile`, clubhouse's own answers to what the wrk scripts send with
 * it (check, the list, the detail of each group on its line) into `file` (JSON): what a baseline
 * that answers each session with its own bytes sends (baseline.ts, per session). Each must be a 200.
 */
export async function recordSessionAnswers(clubhouse: Server, loadFile: string, file: string): Promise<void> {
  const lines = readFileSync(loadFile, 'utf8')
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => line.split(' '));
  const agent = new http.Agent({ keepAlive: true, maxSockets: RECORDING_CONCURRENCY });
  const answers: Record<string, OwnAnswers> = {};
  let next = 0;
  const recorder = async () => {
    while (next < lines.length) {
      const [id = '', ...groups] = lines[next++]!;
      const body = async (urlPath: string) => {
        const raw = await get(`${clubhouse.url}${urlPath}`, `sessionid=${id}`, agent);
        if (raw.status !== 200) throw new Error(`recording ${urlPath}: clubhouse answered ${raw.status}`);
        return raw.body;
      };
      const check = await body('/api/auth/check');
      const list = await body('/api/group/');
      const details: Record<string, string> = {};
      for (const group of groups) details[group] = await body(`/api/group/${group}`);
      answers[id] = { check, list, details };
    }
  };
  try {
    await Promise.all(Array.from({ length: RECORDING_CONCURRENCY }, recorder));
  } finally {
    agent.destroy();
  }
  writeFileSync(file, JSON.stringify(answers));
}

/**
 * What differs between the baseline's answers and clubhouse's now (status, header names and values
 * but X-Request-Id's and Date's, body): empty when the baseline is the copy it should be.
 */
export async function answerDifferences(baseline: Server, clubhouse: Server, loadFile: string) {
  const differences: string[] = [];
  const comparable = (raw: Raw) =>
    pairs(raw.rawHeaders)
      .map(([name, value]) => [name.toLowerCase(), value] as const)
      .filter(([name]) => name !== 'date' && name !== 'keep-alive')
      .map(([name, value]) =>
        name === 'x-request-id' ? `${name}: <${value.length} chars>` : `${name}: ${value}`,
      )
      .sort();
  for (const [route, [urlPath, cookie]] of Object.entries(requests(loadFile))) {
    const [a, b] = [
      await get(`${baseline.url}${urlPath}`, cookie),
      await get(`${clubhouse.url}${urlPath}`, cookie),
    ];
    if (a.status !== b.status) differences.push(`${route}: status ${a.status} vs ${b.status}`);
    if (a.body !== b.body) differences.push(`${route}: body of ${a.body.length} vs ${b.body.length} bytes`);
    const [ha, hb] = [comparable(a), comparable(b)];
    const only = (x: string[], y: string[]) => x.filter((line) => !y.includes(line));
    for (const line of only(hb, ha)) differences.push(`${route}: clubhouse only ${line}`);
    for (const line of only(ha, hb)) differences.push(`${route}: baseline only ${line}`);
  }
  return differences;
}

/** Body sizes in bytes, for the report. */
export function bodySizes(answers: Answers): Record<Route, number> {
  return Object.fromEntries(
    Object.entries(answers).map(([route, answer]) => [route, Buffer.byteLength(answer.body)]),
  ) as Record<Route, number>;
}
