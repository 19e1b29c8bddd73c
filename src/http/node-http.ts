// node:http's values, taken from Node's own module object rather than by an ES import. For an ES
// import of a built-in module Node evaluates every export of it, and node:http's WebSocket,
// CloseEvent and MessageEvent are getters that load Node's bundled undici (its fetch and WebSocket,
// about 0.1 s of CPU at every start) for a service that never uses them. Its types are imported
// from 'node:http' as usual: a type import is erased and loads nothing.
const http = process.getBuiltinModule('node:http');

export const { createServer, METHODS, STATUS_CODES } = http;
/** The class itself (node-server.ts answers a raw read with one); its type is node:http's. */
export const NodeServerResponse = http.ServerResponse;
