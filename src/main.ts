// Entry point of `npm start` (and of every worker under WORKERS): Node's module compile cache, then
// the service (serve.ts). A module's static imports are all loaded before its first line runs, so
// the cache is switched on here, in a module that imports nothing of the service, and the service
// is imported after it: its modules and their libraries (some 500 files) then come from the cache,
// compiled, and for our TypeScript already stripped of its types, instead of being read, stripped
// and compiled at every start (docs/deploy.md: Start-up).
import { enableCompileCache } from 'node:module';
import { fileURLToPath } from 'node:url';

// NODE_COMPILE_CACHE, when set, has switched the cache on before this line (the image's, filled
// when it is built), and this call keeps it. Otherwise the checkout's own directory: private to
// its owner, unlike the shared temporary directory Node would choose, as a cache entry is code
// that runs. Each entry is checked against its file's content, so a changed file is compiled
// afresh; a directory that cannot be written (a read-only checkout) only means no cache.
enableCompileCache(fileURLToPath(new URL('../node_modules/.cache/clubhouse-compile', import.meta.url)));
const { serve } = await import('./serve.ts');
await serve();
