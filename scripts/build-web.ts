// `npm run build:web` (also run by `npm install` through `prepare`): bundles the web client of
// web/src into web/dist with esbuild. Asset names carry a content hash, so the server can let
// browsers keep them for a year; index.html is rewritten to name them.
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';
import { build } from 'esbuild';

const WEB_DIR = fileURLToPath(new URL('../web/', import.meta.url));

export interface BuiltFile {
  /** Path under the output directory, e.g. `assets/app-3FQ2X7ZK.js`. */
  readonly name: string;
  readonly bytes: number;
  readonly gzipBytes: number;
}

export interface WebBuild {
  readonly outdir: string;
  readonly files: readonly BuiltFile[];
}

/**
 * Builds web/src and web/index.html into `outdir` (default web/dist), replacing what was there.
 * Resolves with the files written and their sizes; rejects on any compile error.
 */
export async function buildWebClient(outdir: string = path.join(WEB_DIR, 'dist')): Promise<WebBuild> {
  // Built beside the target and swapped in whole by two renames, so a server starting meanwhile sees
  // the old build, the new one, or (for an instant) none, but never half of one.
  const staging = `${outdir}.tmp-${process.pid}`;
  rmSync(staging, { recursive: true, force: true });
  mkdirSync(staging, { recursive: true });
  try {
    const result = await build({
      absWorkingDir: WEB_DIR,
      entryPoints: ['src/app.ts', 'src/style.css'],
      outdir: staging,
      entryNames: 'assets/[name]-[hash]',
      assetNames: 'assets/[name]-[hash]',
      loader: { '.svg': 'file' },
      bundle: true,
      minify: true,
      format: 'esm',
      target: ['es2022', 'chrome100', 'firefox100', 'safari15'],
      legalComments: 'none',
      charset: 'utf8',
      metafile: true,
      logLevel: 'silent',
    });
    const outputs = Object.keys(result.metafile.outputs).map((file) =>
      path.relative(staging, path.resolve(WEB_DIR, file)).split(path.sep).join('/'),
    );
    writeFileSync(
      path.join(staging, 'index.html'),
      linkAssets(readFileSync(path.join(WEB_DIR, 'index.html'), 'utf8'), outputs),
    );
    const previous = `${outdir}.old-${process.pid}`;
    rmSync(previous, { recursive: true, force: true });
    if (existsSync(outdir)) renameSync(outdir, previous);
    renameSync(staging, outdir);
    rmSync(previous, { recursive: true, force: true });
    const files = [...outputs, 'index.html'].sort().map((name) => {
      const content = readFileSync(path.join(outdir, name));
      return { name, bytes: content.length, gzipBytes: gzipSync(content, { level: 9 }).length };
    });
    return { outdir, files };
  } finally {
    rmSync(staging, { recursive: true, force: true });
  }
}

/** Points each `/assets/NAME.EXT` of the HTML shell at its hashed output `assets/NAME-HASH.EXT`. */
function linkAssets(html: string, outputs: readonly string[]): string {
  return html.replace(/\/assets\/([a-z0-9-]+)\.([a-z]+)/g, (reference, name: string, ext: string) => {
    const output = outputs.find((file) => new RegExp(`^assets/${name}-[A-Z0-9]+\\.${ext}$`).test(file));
    if (output === undefined)
      throw new Error(`web/index.html names ${reference}, which the build did not produce`);
    return `/${output}`;
  });
}

if (process.argv[1] !== undefined && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const built = await buildWebClient();
  for (const file of built.files) {
    process.stdout.write(
      `${path.relative(process.cwd(), path.join(built.outdir, file.name))}  ${file.bytes} B (${file.gzipBytes} B gzipped)\n`,
    );
  }
}
