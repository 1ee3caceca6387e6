// The kubelet API of each virtual node this process maintains, each on the node's own port: opened as the
// node controller keeps the node, closed when the node is deregistered or leadership ends.
import type { AccountEntries, NodeEndpoints } from '../node-controller.ts';
import type { NodeUsageReader, WatchedPods } from '../node-usage.ts';
import type { KubeletApiSettings } from './kubelet-api.ts';
import { KubeletApiServer } from './server.ts';

export interface KubeletEndpointsOptions extends KubeletApiSettings {
  /** The address every node's port is listened on. */
  readonly host: string;
  readonly pods: WatchedPods;
  readonly usage: NodeUsageReader;
  readonly accounts: AccountEntries;
}

export class KubeletEndpoints implements NodeEndpoints {
  readonly #options: KubeletEndpointsOptions;
  readonly #servers = new Map<string, { port: number; server: KubeletApiServer }>();
  /** The port each node last failed to listen on: said once, tried again on the node's next look. */
  readonly #failed = new Map<string, number>();
  /** Set by `stopAll`: a reconcile still in flight then must not open a port nobody would close. */
  #closed = false;

  constructor(options: KubeletEndpointsOptions) {
    this.#options = options;
  }

  /** Serves `node` on `port`, moving it when it served elsewhere. A port that cannot be had is logged. */
  async serve(node: string, port: number): Promise<void> {
    if (this.#closed || this.#servers.get(node)?.port === port) return;
    await this.#close(node);
    const { log } = this.#options;
    const server = new KubeletApiServer({
      ...this.#options,
      node,
      port,
      usage: (name) => this.#options.usage.usage(name),
      log: log.child({ node }),
    });
    try {
      await server.start();
    } catch (error) {
      if (this.#failed.get(node) !== port)
        log.warn({ node, port, err: error }, 'virtual node: the kubelet API cannot listen on its port');
      this.#failed.set(node, port);
      return;
    }
    // Leadership may have ended while it started.
    if (this.#closed) {
      await server.close();
      return;
    }
    this.#failed.delete(node);
    this.#servers.set(node, { port, server });
    log.info({ node, port }, 'virtual node: kubelet API serving');
  }

  async stop(node: string): Promise<void> {
    this.#failed.delete(node);
    await this.#close(node);
  }

  /** Closes every node's port, for good: leadership ended, or the process stops. */
  async stopAll(): Promise<void> {
    this.#closed = true;
    await Promise.all([...this.#servers.keys()].map((node) => this.#close(node)));
  }

  async #close(node: string): Promise<void> {
    const served = this.#servers.get(node);
    this.#servers.delete(node);
    this.#options.usage.forget(node);
    await served?.server.close();
  }
}
