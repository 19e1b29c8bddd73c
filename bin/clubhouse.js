#!/usr/bin/env node
// `npx clubhouse …`: runs the admin CLI on the project's pinned Node 24, whatever node started this.
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const cli = fileURLToPath(new URL('../src/cli/main.ts', import.meta.url));
const major = Number(process.versions.node.split('.')[0]);
const node =
  major >= 24 ? process.execPath : fileURLToPath(new URL('../node_modules/node/bin/node', import.meta.url));
const result = spawnSync(node, ['--disable-warning=ExperimentalWarning', cli, ...process.argv.slice(2)], {
  stdio: 'inherit',
});
if (result.error) {
  process.stderr.write(`clubhouse: cannot run ${node}: ${result.error.message}\n`);
  process.exit(1);
}
process.exit(result.status ?? 1);
