// The node:http server under Fastify (its serverFactory): the raw read path first, then Fastify;
// CONNECT handed to Fastify like any other method; and the server timeouts Fastify would set itself.
import type { IncomingMessage, Server, ServerOptions, ServerResponse } from 'node:http';
import { Socket } from 'node:net';
import type { Logger } from 'pino';
import { createServer, NodeServerResponse } from './node-http.ts';
import type { RawHandler } from './raw-reads.ts';

type Handler = (request: IncomingMessage, response: ServerResponse) => void;

export interface NodeServerOptions {
  readonly raw: RawHandler;
  readonly logger: Logger;
  readonly keepAliveTimeoutMs: number;
  readonly requestTimeoutMs: number;
  readonly headersTimeoutMs: number;
}

/** Fastify's serverFactory for these options. */
export function nodeServerFactory(
  options: NodeServerOptions,
): (handler: Handler, fastifyOptions: { http?: ServerOptions }) => Server {
  return (handler, fastifyOptions) => {
    // Fastify answers what the raw path leaves, at once or after an asynchronous catch-up; one
    // that is half-written already is cut, so the client does not wait.
    const fallback = (request: IncomingMessage, response: ServerResponse) => {
      if (!response.headersSent) handler(request, response);
      else if (!response.writableEnded) response.destroy();
    };
    const server = createServer(fastifyOptions.http ?? {}, (request, response) => {
      let answered = false;
      try {
        answered = options.raw(request, response, fallback);
      } catch (err) {
        // Never let the raw path take the process down: the Fastify route answers instead.
        options.logger.error({ err }, 'raw read path failed');
      }
      if (!answered) fallback(request, response);
    });
    server.on('connect', (request, socket) => {
      // Always a net.Socket on this server (no custom transport).
      if (socket instanceof Socket) answerConnect(handler, request, socket, options.headersTimeoutMs);
      else socket.destroy();
    });
    // What Fastify does for the servers it makes itself.
    server.keepAliveTimeout = options.keepAliveTimeoutMs;
    server.requestTimeout = options.requestTimeoutMs;
    server.setTimeout(0);
    return server;
  };
}

/**
 * Node hands CONNECT to the `connect` event, detached from its HTTP parser, and drops the connection
 * unanswered when nobody listens. Fastify answers it as any other method (405 on an /api endpoint,
 * contract §1, with every standard header); nothing is tunnelled, so the connection closes after.
 */
function answerConnect(handler: Handler, request: IncomingMessage, socket: Socket, timeoutMs: number): void {
  // Detached from the server, the socket has no error listener and no deadline of its own any more.
  socket.on('error', () => socket.destroy());
  socket.setTimeout(timeoutMs, () => socket.destroy());
  const response = new NodeServerResponse(request);
  response.shouldKeepAlive = false;
  response.assignSocket(socket);
  response.on('finish', () => {
    response.detachSocket(socket);
    socket.end();
  });
  handler(request, response);
}
