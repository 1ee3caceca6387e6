import { connect, createServer, type Server, type Socket } from 'node:net';

/**
 * A TCP relay in front of the apiserver that can misbehave like a network: `freeze` keeps
 * connections open but silent (a half-dead link only stall detection can notice), `cut` drops them
 * and refuses new ones. TLS passes through untouched.
 */
export class TcpProxy {
  readonly #server: Server;
  readonly #pairs = new Set<[Socket, Socket]>();
  #refusing = false;

  private constructor(server: Server) {
    this.#server = server;
  }

  static async start(target: URL): Promise<TcpProxy> {
    const server = createServer();
    const proxy = new TcpProxy(server);
    server.on('connection', (client) => proxy.#relay(client, target));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    return proxy;
  }

  get url(): string {
    const address = this.#server.address();
    if (typeof address !== 'object' || address === null) throw new Error('proxy not listening');
    return `https://127.0.0.1:${address.port}`;
  }

  /** Connections open now stop passing bytes but stay open; new connections work normally. */
  freeze(): void {
    for (const [client, upstream] of this.#pairs) {
      client.unpipe(upstream);
      upstream.unpipe(client);
      client.pause();
      upstream.pause();
    }
  }

  /** Drops every connection and refuses new ones until `resume`. */
  cut(): void {
    this.#refusing = true;
    for (const [client, upstream] of this.#pairs) {
      client.destroy();
      upstream.destroy();
    }
  }

  resume(): void {
    this.#refusing = false;
  }

  async close(): Promise<void> {
    this.cut();
    await new Promise<void>((resolve) => this.#server.close(() => resolve()));
  }

  #relay(client: Socket, target: URL): void {
    if (this.#refusing) {
      client.destroy();
      return;
    }
    const upstream = connect(Number(target.port), target.hostname);
    const pair: [Socket, Socket] = [client, upstream];
    this.#pairs.add(pair);
    const teardown = () => {
      this.#pairs.delete(pair);
      client.destroy();
      upstream.destroy();
    };
    for (const socket of pair) {
      socket.on('error', teardown);
      socket.on('close', teardown);
    }
    client.pipe(upstream);
    upstream.pipe(client);
  }
}
