// The layers of src/, enforced by `npm run lint`. Every import points down:
//
//   src/main.ts, serve.ts, server.ts, cluster.ts, logger.ts, cli/   start, stop, processes, the admin command
//   src/app.ts      the composition root: builds stores, backends, domain objects and routes
//   src/config/     every setting parsed once; hands the layers below their own option types
//   src/routes/     one file per endpoint family, its schemas beside it
//   src/http/       HTTP mechanics: the edge, headers, errors, endpoints, the raw read path
//   src/metrics/    the metrics, one narrow view per consumer (the HTTP edge, the login routes, the
//                   backends, the group sync)
//   src/auth/, src/groups/   the domain: login, usernames, sessions, throttle; group reads, import
//   src/backends/, src/store/   what the domain stands on: authentication backends, storage
//
// backends/ and store/ import nothing outside themselves (they take plain options; they never see
// config/). http/ knows nothing of groups/ or backends/: what a request records goes through its
// view of metrics/. A lower layer never imports a higher one, types included, and nothing imports in
// a circle. No exceptions.
/** @type {import('dependency-cruiser').IConfiguration} */
const TOP = '^src/(main|serve|server|cluster|logger)\\.ts$|^src/cli/';

/** `from` may not import anything matching one of `above`. */
function below(name, from, above, comment) {
  return { name, comment, severity: 'error', from: { path: from }, to: { path: above } };
}

module.exports = {
  forbidden: [
    {
      name: 'no-circular',
      comment: 'A circle has no bottom: split the shared part into a module both import.',
      severity: 'error',
      from: {},
      to: { circular: true },
    },
    below(
      'store-stands-alone',
      '^src/store/',
      '^src/(?!store/)',
      'store/ takes plain options and knows nothing of the layers above it (nor of backends/).',
    ),
    below(
      'backends-stand-alone',
      '^src/backends/',
      '^src/(?!backends/)',
      'backends/ take plain options and know nothing of the layers above them (nor of store/).',
    ),
    below(
      'domain-below-metrics',
      '^src/(auth|groups)/',
      `^src/(metrics|http|routes|config)/|^src/app\\.ts$|${TOP}`,
      'The domain answers in its own terms; what is counted of it, HTTP, routes and settings are above it.',
    ),
    below(
      'metrics-below-http',
      '^src/metrics/',
      `^src/(http|routes|config)/|^src/app\\.ts$|${TOP}`,
      'metrics/ records what the layers above hand it; it serves nothing itself (http/ and routes/ do).',
    ),
    below(
      'http-knows-no-domain-parts',
      '^src/http/',
      '^src/(groups|backends)/',
      'http/ is mechanics: it records through its view of metrics/, never with the types of a group sync or a backend.',
    ),
    below(
      'http-below-routes',
      '^src/http/',
      `^src/(routes|config)/|^src/app\\.ts$|${TOP}`,
      'http/ is mechanics; which routes exist is decided above it (src/app.ts).',
    ),
    below(
      'routes-below-config',
      '^src/routes/',
      `^src/config/|^src/app\\.ts$|${TOP}`,
      'Routes are handed their options by the composition root; they never read settings.',
    ),
    below(
      'config-below-app',
      '^src/config/',
      `^src/app\\.ts$|${TOP}`,
      'config/ names the option types of the layers it configures (the rules above keep them from reading it).',
    ),
    below(
      'app-below-entry-points',
      '^src/app\\.ts$',
      TOP,
      'The composition root is what the entry points start.',
    ),
    {
      name: 'no-orphans',
      comment: 'A module nobody imports is dead (knip checks exports too).',
      severity: 'error',
      from: { orphan: true, pathNot: ['\\.d\\.ts$', '^src/(main|cli/main)\\.ts$'] },
      to: {},
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    includeOnly: '^src/',
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: {
      exportsFields: ['exports'],
      conditionNames: ['import', 'require', 'node', 'default'],
    },
  },
};
