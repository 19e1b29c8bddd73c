// Image build step (Containerfile, deps stage): fills Node's module compile cache, so that the
// service's start reads its modules compiled, and our TypeScript already stripped of its types,
// instead of stripping and compiling some 400 files at every start (docs/deploy.md: Start-up).
// Usage: node warm-compile-cache.mjs APP_DIR CACHE_DIR   (the image's NODE_COMPILE_CACHE)
//
// Node keeps the cache per set of V8 flags, so the modules are compiled under the node flags of
// `npm start`, which are the image's CMD's too: read here from package.json, not written twice.
// Two runs under those flags:
// - every module of src/ but the two entry points (the service's and the admin command's): every
//   module the service can load, those loaded only when a feature is on (passkeys, an identity
//   provider) included;
// - the service's entry point, src/main.ts, given a PORT it refuses: it stops at its settings
//   (exit 2) before it serves, its own compile and its imports' kept.
import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { flushCompileCache } from 'node:module';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const ENTRY_POINTS = new Set(['main.ts', path.join('cli', 'main.ts')]);
const IMPORT_MODULES = '--import-modules';

const [appDir, cacheDir, mode] = process.argv.slice(2);
if (!appDir || !cacheDir) throw new Error('usage: node warm-compile-cache.mjs APP_DIR CACHE_DIR');
const srcDir = path.join(appDir, 'src');

if (mode === IMPORT_MODULES) {
  const modules = readdirSync(srcDir, { recursive: true }).filter(
    (file) => file.endsWith('.ts') && !ENTRY_POINTS.has(file),
  );
  for (const file of modules) await import(pathToFileURL(path.join(srcDir, file)).href);
  flushCompileCache();
  process.stdout.write(`compile cache: ${modules.length} modules of src/ and what they import\n`);
  process.exit(0);
}

const start = JSON.parse(readFileSync(path.join(appDir, 'package.json'), 'utf8')).scripts.start;
// Variables before `exec` (MALLOC_ARENA_MAX) are the image's ENV too; they do not key the cache.
const flags = /^(?:[A-Z_]+=\S+ )*exec node ((?:--\S+ )*)src\/main\.ts$/.exec(start)?.[1]?.trim().split(' ');
if (!flags) throw new Error(`npm start is not "[NAME=VALUE …] exec node FLAGS src/main.ts": ${start}`);

/** Runs node with `args` under npm start's flags; fails the build unless it exits `status`. */
function node(args, status, env = {}) {
  const run = spawnSync(process.execPath, [...flags, ...args], {
    cwd: appDir,
    env: { ...process.env, NODE_COMPILE_CACHE: cacheDir, ...env },
    encoding: 'utf8',
    timeout: 300_000,
  });
  if (run.status !== status) {
    throw new Error(
      `node ${args.join(' ')} exited ${run.status} (${run.error ?? run.signal}):\n${run.stderr}`,
    );
  }
  return run;
}

process.stdout.write(node([fileURLToPath(import.meta.url), appDir, cacheDir, IMPORT_MODULES], 0).stdout);
const entry = node([path.join(srcDir, 'main.ts')], 2, { PORT: 'none' });
if (!/invalid setting PORT/.test(entry.stderr))
  throw new Error(`src/main.ts stopped otherwise:\n${entry.stderr}`);
process.stdout.write(`compile cache: src/main.ts, up to its settings; in ${cacheDir}\n`);
