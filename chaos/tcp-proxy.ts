import { createConnection, createServer, type Server, type Socket } from 'node:net';

/**
 * A loopback TCP relay in front of the apiserver, so the suite can cut the operator's connections —
 * its watches and any request in flight — at an instant of its choosing, without restarting the
 * apiserver. TLS passes through untouched: the certificate names 127.0.0.1, whatever the port.
 */
export class TcpProxy {
  readonly #server: Server;
  readonly #pairs = new Set<[Socket, Socket]>();

  private constructor(server: Server) {
    this.#server = server;
  }

  static async start(targetPort: number): Promise<TcpProxy> {
    const server = createServer();
    const proxy = new TcpProxy(server);
    server.on('connection', (client) => proxy.#relay(client, targetPort));
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(0, '127.0.0.1', () => resolve());
    });
    return proxy;
  }

  get port(): number {
    const address = this.#server.address();
    if (address === null || typeof address === 'string') throw new Error('the proxy is not listening');
    return address.port;
  }

  /** Resets every relayed connection now; returns how many there were. */
  cutAll(): number {
    const count = this.#pairs.size;
    for (const [client, upstream] of this.#pairs) {
      client.resetAndDestroy();
      upstream.resetAndDestroy();
    }
    this.#pairs.clear();
    return count;
  }

  async close(): Promise<void> {
    this.cutAll();
    await new Promise<void>((resolve) => this.#server.close(() => resolve()));
  }

  #relay(client: Socket, targetPort: number): void {
    const upstream = createConnection({ host: '127.0.0.1', port: targetPort });
    const pair: [Socket, Socket] = [client, upstream];
    this.#pairs.add(pair);
    const drop = () => {
      this.#pairs.delete(pair);
      client.destroy();
      upstream.destroy();
    };
    for (const socket of pair) {
      socket.on('error', drop);
      socket.on('close', drop);
    }
    client.pipe(upstream);
    upstream.pipe(client);
  }
}
