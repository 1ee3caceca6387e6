import { createServer, type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';

/** One request as the server saw it. Times are `performance.now()` of this process. */
export interface RecordedRequest {
  readonly method: string;
  readonly url: string;
  readonly headers: IncomingHttpHeaders;
  readonly body: string;
  /** Identifies the TCP connection, to observe keep-alive reuse. */
  readonly connection: number;
  readonly receivedAt: number;
  /** When the server finished its answer, if it did. */
  answeredAt: number | undefined;
  /** The client closed the connection before the server finished answering. */
  abandonedByClient: boolean;
}

/** How the server answers one request. */
export type Reply = (res: ServerResponse, request: RecordedRequest) => void;

export interface MisbehavingServer {
  readonly url: string;
  readonly requests: readonly RecordedRequest[];
  /** Sets the answers of the next requests, in order; the last one repeats. */
  script(...replies: Reply[]): void;
  /** Polls the recorded requests until `condition` holds; fails after `timeoutMs`. */
  waitFor(condition: (requests: readonly RecordedRequest[]) => boolean, timeoutMs?: number): Promise<void>;
  close(): Promise<void>;
}

function send(res: ServerResponse, status: number, body: string, headers: Record<string, string>): void {
  res.writeHead(status, { 'content-length': Buffer.byteLength(body), ...headers });
  res.end(body);
}

export const reply = {
  envelope(code: number, data: unknown, options: { status?: number; message?: string } = {}): Reply {
    const body = JSON.stringify({ code, message: options.message ?? 'ok', data });
    return (res) => send(res, options.status ?? 200, body, { 'content-type': 'application/json' });
  },
  text(status: number, body: string, contentType = 'text/plain'): Reply {
    return (res) => send(res, status, body, { 'content-type': contentType });
  },
  rateLimited(retryAfterSeconds: number): Reply {
    const body = JSON.stringify({ code: 429, message: 'slow down', data: null });
    return (res) => send(res, 429, body, { 'retry-after': String(retryAfterSeconds) });
  },
  /** Never answers: the client has to give up. */
  hang(): Reply {
    return () => {};
  },
  /** Announces a body, sends half of it, then kills the connection. */
  dropMidResponse(): Reply {
    return (res) => {
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': 64 });
      res.write('{"code":10000,"message":"ok","da', () => res.socket?.destroy());
    };
  },
};

/** A real HTTP server on 127.0.0.1 that answers as scripted, and records what it saw. */
export async function startMisbehavingServer(): Promise<MisbehavingServer> {
  const requests: RecordedRequest[] = [];
  let replies: Reply[] = [reply.envelope(10000, null)];
  const connectionIds = new WeakMap<object, number>();
  let nextConnection = 0;

  const server = createServer(async (req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const recorded: RecordedRequest = {
      method: req.method ?? '',
      url: req.url ?? '',
      headers: req.headers,
      body: Buffer.concat(chunks).toString('utf8'),
      connection: connectionIds.get(req.socket) ?? -1,
      receivedAt: performance.now(),
      answeredAt: undefined,
      abandonedByClient: false,
    };
    requests.push(recorded);
    res.on('finish', () => {
      recorded.answeredAt = performance.now();
    });
    res.on('close', () => {
      if (!res.writableFinished) recorded.abandonedByClient = true;
    });
    const next = replies.length > 1 ? replies.shift() : replies[0];
    next?.(res, recorded);
  });
  server.on('connection', (socket) => connectionIds.set(socket, nextConnection++));

  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;

  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    script(...scripted) {
      replies = scripted;
    },
    async waitFor(condition, timeoutMs = 5000) {
      const deadline = performance.now() + timeoutMs;
      while (!condition(requests)) {
        if (performance.now() > deadline) throw new Error(`condition not met within ${timeoutMs} ms`);
        await sleep(5);
      }
    },
    close() {
      server.closeAllConnections();
      return new Promise((resolve, reject) => server.close((error) => (error ? reject(error) : resolve())));
    },
  };
}

/** A loopback port on which nothing listens: connecting is refused. */
export async function refusedPortUrl(): Promise<string> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return `http://127.0.0.1:${port}`;
}
