import { connect, createServer, type Server, type Socket } from 'node:net';

/**
 * A loopback TCP relay in front of the simulator that passes requests through at once and holds every
 * answer back for `delayMs`. A create is carried out as soon as it arrives, so an operator killed
 * while the answer is held never learns the id of what it made: the crash that recovery exists for.
 * (The simulator's own latency fault delays a call before it is carried out, and a call whose caller
 * has died by then is never carried out.)
 */
export class SlowResponses {
  readonly #server: Server;
  readonly #sockets = new Set<Socket>();

  private constructor(server: Server) {
    this.#server = server;
  }

  static async start(target: URL, delayMs: number): Promise<SlowResponses> {
    const server = createServer();
    const relay = new SlowResponses(server);
    server.on('connection', (client) => relay.#relay(client, target, delayMs));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    return relay;
  }

  get url(): string {
    const address = this.#server.address();
    if (typeof address !== 'object' || address === null) throw new Error('the relay is not listening');
    return `http://127.0.0.1:${address.port}`;
  }

  async close(): Promise<void> {
    for (const socket of this.#sockets) socket.destroy();
    await new Promise<void>((resolve) => this.#server.close(() => resolve()));
  }

  #relay(client: Socket, target: URL, delayMs: number): void {
    const upstream = connect(Number(target.port), target.hostname);
    for (const socket of [client, upstream]) {
      this.#sockets.add(socket);
      socket.on('error', () => teardown());
      socket.on('close', () => teardown());
    }
    const teardown = () => {
      for (const socket of [client, upstream]) {
        this.#sockets.delete(socket);
        socket.destroy();
      }
    };
    client.pipe(upstream);
    // Equal delays fire in order, so the answer's bytes keep theirs.
    upstream.on('data', (chunk) => setTimeout(() => client.writable && client.write(chunk), delayMs));
    upstream.on('end', () => setTimeout(() => client.end(), delayMs));
  }
}
