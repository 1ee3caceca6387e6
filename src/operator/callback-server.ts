import { createHash, timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Logger } from 'pino';
import { podCallback } from '../api/schemas/pods.ts';

const MAX_BODY_BYTES = 16 * 1024;
/** A callback is a few hundred bytes: a sender slower than this is holding a socket, not posting. */
const HEADERS_TIMEOUT_MS = 5_000;
const REQUEST_TIMEOUT_MS = 10_000;
/** Connections at once; more are refused, so a flood cannot exhaust the operator's sockets. */
export const MAX_CONNECTIONS = 64;
/** Shortest token accepted: 32 characters, 128 bits as hex, beyond guessing through the URL. */
export const MIN_TOKEN_LENGTH = 32;
export const CALLBACK_PATH = '/v1/callbacks/pods/';

export interface CallbackServerOptions {
  port: number;
  /** The address to listen on; all interfaces by default. */
  host?: string;
  /** The secret part of the callback URL; a caller that does not know it is refused. */
  token: string;
  /** Called for every authentic callback: ask for a fresh look at the cloud. */
  onHint(podId: string, status: string): void;
  log: Logger;
}

/** The callback URL to give the cloud for every pod. */
export function callbackUrl(baseUrl: string, token: string): string {
  return `${baseUrl.replace(/\/+$/, '')}${CALLBACK_PATH}${token}`;
}

/**
 * Receives pod lifecycle callbacks. The cloud's callback carries no signature, so the URL carries a
 * secret token, compared in constant time; a wrong one learns nothing. A callback only wakes a re-read
 * of the cloud — a forged one could cost one list call, never change what the operator believes.
 */
export async function startCallbackServer(
  options: CallbackServerOptions,
): Promise<{ url: string; maxConnections: number; close(): Promise<void> }> {
  const expected = digest(options.token);
  const server = createServer(
    // Node checks the timeouts every `connectionsCheckingInterval` (30 s by default): check each second.
    {
      headersTimeout: HEADERS_TIMEOUT_MS,
      requestTimeout: REQUEST_TIMEOUT_MS,
      connectionsCheckingInterval: 1_000,
    },
    (request, response) => {
      // A sender that goes away mid-body rejects the read: answered (if anyone listens), never thrown.
      handle(request, expected, options).then(
        (status) => respond(response, status),
        (error: unknown) => {
          options.log.debug({ err: error }, 'pod callback request failed');
          respond(response, 400);
        },
      );
    },
  );
  server.maxConnections = MAX_CONNECTIONS;
  await listen(server, options.port, options.host ?? '0.0.0.0');
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    maxConnections: server.maxConnections,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

async function handle(
  request: IncomingMessage,
  expected: Buffer,
  options: CallbackServerOptions,
): Promise<number> {
  const url = request.url ?? '';
  if (request.method !== 'POST' || !url.startsWith(CALLBACK_PATH)) return 404;
  if (!timingSafeEqual(digest(url.slice(CALLBACK_PATH.length)), expected)) return 401;
  const body = await readBody(request);
  // Only a hint: it wakes a re-read of the cloud and is never trusted as state.
  const parsed = podCallback.safeParse(body);
  if (!parsed.success) return 400;
  options.log.debug({ podId: parsed.data.podId, status: parsed.data.status }, 'pod callback');
  options.onHint(parsed.data.podId, parsed.data.status);
  return 204;
}

function respond(response: ServerResponse, status: number): void {
  if (response.headersSent || response.destroyed) return;
  response.writeHead(status).end();
}

/** Hashing first makes the comparison constant-time whatever the lengths. */
function digest(text: string): Buffer {
  return createHash('sha256').update(text).digest();
}

async function readBody(request: IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of request) {
    size += (chunk as Buffer).length;
    if (size > MAX_BODY_BYTES) return undefined;
    chunks.push(chunk as Buffer);
  }
  try {
    return JSON.parse(Buffer.concat(chunks).toString('utf8'));
  } catch {
    return undefined;
  }
}

function listen(server: Server, port: number, host: string): Promise<void> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve());
  });
}
