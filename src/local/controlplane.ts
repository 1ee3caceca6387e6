// A real Kubernetes control plane (etcd + kube-apiserver, no nodes, no controllers) on loopback, for
// integration tests and local runs; ./node.ts adds a node to it. See tools/controlplane for how the binary is built and cached.
import { mkdir, mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { KubeConfig } from '@kubernetes/client-node';
import type { KubeConnection } from '../kube/connection.ts';
import { kubeconfigConnection } from '../kube/kubeconfig.ts';
import { resolveControlPlaneBinary } from './controlplane/binary.ts';
import { ADMIN_USER, type Credentials, ensureCredentials } from './controlplane/credentials.ts';
import {
  apiserverArgs,
  apiserverUrl,
  type EtcdPorts,
  etcdArgs,
  etcdClientUrl,
} from './controlplane/flags.ts';
import { type KubeconfigSpec, writeKubeconfig } from './controlplane/kubeconfig.ts';
import { type ControlPlaneLayout, controlPlaneLayout } from './controlplane/layout.ts';
import { freeLoopbackPorts } from './controlplane/ports.ts';
import { apiserverReady, etcdHealthy } from './controlplane/probes.ts';
import { waitUntilReady } from './controlplane/readiness.ts';
import { ServerProcess } from './controlplane/server-process.ts';
import { readServingCa } from './controlplane/serving-ca.ts';

export { CONTROLPLANE_BIN_ENV } from './controlplane/binary.ts';
export { ControlPlaneBinaryMissingError, ControlPlaneError } from './controlplane/errors.ts';

export interface ControlPlaneOptions {
  /**
   * Keep state here (created if missing, kept on stop, reused on the next start). Default: a fresh
   * temporary directory, removed by `stop()`.
   */
  dataDir?: string;
  /** Default: $GPUCLOUD_CONTROLPLANE_BIN, else the cached build of tools/controlplane. */
  binary?: string;
  /** Appended to the kube-apiserver command line, e.g. `--feature-gates=...`. */
  apiserverFlags?: readonly string[];
  /** Set in kube-apiserver's environment, e.g. the Go runtime's `GOGC` and `GOMEMLIMIT`. */
  apiserverEnv?: Readonly<Record<string, string>>;
  /** Bound on each server's startup. Default 90 s: the machine may be busy. */
  readyTimeoutMs?: number;
}

export interface ControlPlane {
  /** Admin kubeconfig (user `admin` in `system:masters`). */
  kubeconfigPath: string;
  /** Loaded from `kubeconfigPath` with the operator's own loader: what a `KubeClient` takes. */
  connection: KubeConnection;
  /** Loaded from `kubeconfigPath` by client-node, for tests that use its typed APIs. */
  kubeConfig: KubeConfig;
  /** `https://127.0.0.1:<port>` */
  server: string;
  dataDir: string;
  /**
   * The aggregation layer's front proxy: the CA extension servers trust, and the client pair the apiserver
   * proxies with (a test holding it can pose as the apiserver).
   */
  frontProxy: FrontProxy;
  /** The CA of the apiserver's serving certificate (for `server`, `127.0.0.1` and `10.96.0.1`). */
  servingCaPem: string;
  /** The layout of `dataDir`: where the cluster CA a node's certificates come from is kept. */
  layout: ControlPlaneLayout;
  /** A kubeconfig for another identity: a bearer token (e.g. a service account's), for RBAC tests. */
  kubeconfigForToken(token: string, name: string): Promise<string>;
  /** Stops kube-apiserver only; etcd keeps the data (for restart and chaos tests). */
  stopApiserver(): Promise<void>;
  /** Starts kube-apiserver again on the same port and waits until it is ready. */
  startApiserver(): Promise<void>;
  /** Stops everything and removes a temporary data directory. Idempotent. */
  stop(): Promise<void>;
}

export interface FrontProxy {
  caPem: string;
  certPem: string;
  keyPem: string;
}

const DEFAULT_READY_TIMEOUT_MS = 90_000;
const IDENTITY_NAME = /^[a-z0-9]([-a-z0-9.]{0,61}[a-z0-9])?$/;

/**
 * Starts etcd and kube-apiserver on free loopback ports and resolves once /readyz passes. On failure,
 * whatever was started is stopped and the data directory is kept so the logs named in the error remain.
 */
export async function startControlPlane(options: ControlPlaneOptions = {}): Promise<ControlPlane> {
  const binary = options.binary ?? (await resolveControlPlaneBinary());
  const temporary = options.dataDir === undefined;
  const dataDir = options.dataDir ?? (await mkdtemp(join(tmpdir(), 'gpucloud-controlplane-')));
  const layout = controlPlaneLayout(dataDir);
  await mkdir(layout.kubeconfigsDir, { recursive: true });
  const credentials = await ensureCredentials(layout);
  const [client, peer, apiserverPort] = await freeLoopbackPorts(3);
  if (client === undefined || peer === undefined || apiserverPort === undefined) {
    throw new Error('could not reserve three loopback ports');
  }
  const plane = new LocalControlPlane({
    binary,
    layout,
    credentials,
    etcdPorts: { client, peer },
    apiserverPort,
    durable: !temporary,
    removeDataDirOnStop: temporary,
    apiserverFlags: options.apiserverFlags ?? [],
    apiserverEnv: options.apiserverEnv ?? {},
    readyTimeoutMs: options.readyTimeoutMs ?? DEFAULT_READY_TIMEOUT_MS,
  });
  try {
    await plane.start();
  } catch (error) {
    await plane.stopServers();
    throw error;
  }
  return plane;
}

interface PlaneSettings {
  binary: string;
  layout: ControlPlaneLayout;
  credentials: Credentials;
  etcdPorts: EtcdPorts;
  apiserverPort: number;
  durable: boolean;
  removeDataDirOnStop: boolean;
  apiserverFlags: readonly string[];
  apiserverEnv: Readonly<Record<string, string>>;
  readyTimeoutMs: number;
}

class LocalControlPlane implements ControlPlane {
  readonly kubeconfigPath: string;
  readonly server: string;
  readonly dataDir: string;
  readonly #settings: PlaneSettings;
  #kubeConfig: KubeConfig | undefined;
  #connection: KubeConnection | undefined;
  #caPem: string | undefined;
  #frontProxy: FrontProxy | undefined;
  #etcd: ServerProcess | undefined;
  #apiserver: ServerProcess | undefined;
  #stopped: Promise<void> | undefined;

  constructor(settings: PlaneSettings) {
    this.#settings = settings;
    this.dataDir = settings.layout.dataDir;
    this.kubeconfigPath = settings.layout.adminKubeconfig;
    this.server = apiserverUrl(settings.apiserverPort);
  }

  get kubeConfig(): KubeConfig {
    if (!this.#kubeConfig) throw new Error('the control plane has not finished starting');
    return this.#kubeConfig;
  }

  get servingCaPem(): string {
    if (!this.#caPem) throw new Error('the control plane has not finished starting');
    return this.#caPem;
  }

  get layout(): ControlPlaneLayout {
    return this.#settings.layout;
  }

  get frontProxy(): FrontProxy {
    if (!this.#frontProxy) throw new Error('the control plane has not finished starting');
    return this.#frontProxy;
  }

  get connection(): KubeConnection {
    if (!this.#connection) throw new Error('the control plane has not finished starting');
    return this.#connection;
  }

  async start(): Promise<void> {
    const { binary, layout, etcdPorts, durable, readyTimeoutMs } = this.#settings;
    this.#etcd = new ServerProcess({
      binary,
      component: 'etcd',
      args: etcdArgs(layout, etcdPorts, durable),
      logPath: layout.etcdLog,
    });
    await waitUntilReady(this.#etcd, etcdHealthy(etcdClientUrl(etcdPorts)), readyTimeoutMs);
    await this.startApiserver();
    this.#kubeConfig = await writeKubeconfig(
      this.kubeconfigPath,
      this.#identity(ADMIN_USER, this.#adminToken),
    );
    this.#connection = kubeconfigConnection(this.kubeconfigPath);
    const [caPem, certPem, keyPem] = await Promise.all(
      [layout.frontProxyCa, layout.frontProxyCert, layout.frontProxyKey].map((path) =>
        readFile(path, 'utf8'),
      ),
    );
    this.#frontProxy = { caPem: caPem ?? '', certPem: certPem ?? '', keyPem: keyPem ?? '' };
  }

  async startApiserver(): Promise<void> {
    if (this.#apiserver?.running) return;
    const { binary, layout, etcdPorts, apiserverPort, apiserverFlags, apiserverEnv, readyTimeoutMs } =
      this.#settings;
    this.#apiserver = new ServerProcess({
      binary,
      component: 'apiserver',
      args: apiserverArgs(layout, etcdPorts, apiserverPort, apiserverFlags),
      logPath: layout.apiserverLog,
      env: apiserverEnv,
    });
    await waitUntilReady(
      this.#apiserver,
      apiserverReady(this.server, layout.certDir, this.#adminToken),
      readyTimeoutMs,
    );
    // The probe has just verified TLS against this CA, so it is there.
    this.#caPem = await readServingCa(layout.certDir);
  }

  async stopApiserver(): Promise<void> {
    await this.#apiserver?.stop();
  }

  async kubeconfigForToken(token: string, name: string): Promise<string> {
    if (!IDENTITY_NAME.test(name)) {
      throw new Error(
        `identity name ${JSON.stringify(name)} must be a DNS label (lower-case, digits, '-', '.')`,
      );
    }
    if (!/^\S+$/.test(token)) throw new Error(`the token for ${name} is empty or contains whitespace`);
    const path = join(this.#settings.layout.kubeconfigsDir, `${name}.kubeconfig`);
    await writeKubeconfig(path, this.#identity(name, token));
    return path;
  }

  stop(): Promise<void> {
    this.#stopped ??= this.stopServers().then(async () => {
      if (this.#settings.removeDataDirOnStop) await rm(this.dataDir, { recursive: true, force: true });
    });
    return this.#stopped;
  }

  /** Stops the servers, apiserver first so that it never sees its storage vanish. */
  async stopServers(): Promise<void> {
    await this.#apiserver?.stop();
    await this.#etcd?.stop();
  }

  get #adminToken(): string {
    return this.#settings.credentials.adminToken;
  }

  #identity(name: string, token: string): KubeconfigSpec {
    if (!this.#caPem) throw new Error('the control plane has not finished starting');
    return { server: this.server, caPem: this.#caPem, name, token };
  }
}
