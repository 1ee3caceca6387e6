// A real node for a local control plane (./controlplane.ts): containerd (runc, cgroupfs, the CNI bridge)
// and a kubelet v1.36.3 from the control plane's build, in namespaces of their own. What it changes on
// the host, and how each change is undone:
//   - a network namespace, made by `unshare --net` with containerd, and a veth pair into it (with the
//     route to the pods' subnet): they go with the namespace's last process, and are deleted on stop;
//   - a mount namespace for the node's processes, slave to the host's, with empty tmpfs over /run,
//     /var/lib and /var/log (fixed paths the kubelet and containerd write to) and the kernel settings the
//     kubelet sets hidden behind copies: nothing of it is ever visible on the host;
//   - a cgroup tree of the node's own name in every hierarchy, removed on stop (and swept at the next
//     start on the machine if a node died before it could remove it);
//   - its data directory (a temporary one unless given), removed on stop.
// Every process of the node exits with the process that started it, however that one ends (see
// tools/controlplane/supervise.go and watchdog.go). See README, "The local node".
import { mkdir, mkdtemp, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CoreV1Api } from '@kubernetes/client-node';
import { resolveControlPlaneBinary } from './controlplane/binary.ts';
import { KUBERNETES_SERVICE_IP } from './controlplane/flags.ts';
import { type Probe, waitUntilReady } from './controlplane/readiness.ts';
import { ServerProcess } from './controlplane/server-process.ts';
import type { ControlPlane } from './controlplane.ts';
import { issueNodeCertificates } from './node/certificates.ts';
import { cgroupRoots, createCgroupRoot, removeCgroupRoot } from './node/cgroups.ts';
import { CNI_NETWORK_NAME, cniConfig } from './node/cni-config.ts';
import { containerdConfig, mayLowerOomScoreAdj } from './node/containerd-config.ts';
import { type HostTools, resolveHostTools } from './node/host-tools.ts';
import { KUBELET_HEALTHZ_PORT, kubeletConfig, kubeletKubeconfig } from './node/kubelet-config.ts';
import { type NodeLayout, nodeLayout } from './node/layout.ts';
import { attachNetwork, detachNetwork, type NodeNetwork, networkExists } from './node/network.ts';
import { resolvePauseImage, SANDBOX_IMAGE } from './node/pause-image.ts';
import { run } from './node/run.ts';
import { KUBELET_SYSCTLS, readSysctls, restoreSysctls, type SysctlValues } from './node/sysctls.ts';

export { SANDBOX_IMAGE } from './node/pause-image.ts';
export type { SysctlValues } from './node/sysctls.ts';

const NAME_PREFIX = 'gpucloud-node-';
/** A node is Ready about 30 s after its kubelet starts on an idle machine; this one is shared. */
const DEFAULT_READY_TIMEOUT_MS = 180_000;
/** containerd stops its shims' children, then the supervisor kills whatever is left. */
const CONTAINERD_STOP_GRACE_MS = 20_000;
/** Where the node's processes see empty directories of their own. */
const PRIVATE_DIRS = ['/run', '/var/lib', '/var/log'];

export interface NodeOptions {
  /** Default: a fresh temporary directory, removed by `stop()`. Kept on a failed start, for its logs. */
  dataDir?: string;
  readyTimeoutMs?: number;
}

export interface LocalNode {
  /** The Node's name, `gpucloud-node-<index>`. */
  name: string;
  /** The node's InternalIP, on its side of the veth pair. */
  address: string;
  /**
   * The host's end of the veth pair: the one host address the node and its pods reach. A server on the
   * host that pods must call (the simulator of the GPU cloud) listens here, never on the machine's own
   * addresses.
   */
  hostAddress: string;
  podSubnet: string;
  dataDir: string;
  /** containerd's socket, for `ctr --address`. */
  containerdSocket: string;
  kubeletLog: string;
  containerdLog: string;
  /** The host's kernel settings the kubelet would change, as they were before the node started. */
  hostSysctls: SysctlValues;
  /** Runs `ctr` against the node's containerd in the Kubernetes namespace; its stdout. */
  ctr(args: readonly string[]): Promise<string>;
  /**
   * Imports an OCI or Docker image archive into the node's containerd. `reference`: the full name the
   * archive's index gives its image (`org.opencontainers.image.ref.name`, as buildah writes it), which
   * containerd keeps only under a base name it is told; without it, the archive must name its image in
   * `io.containerd.image.name`.
   */
  importImage(archive: string, reference?: string): Promise<void>;
  /** Stops the kubelet, containerd and every container, and undoes the node's host changes. Idempotent. */
  stop(): Promise<void>;
}

/**
 * Starts a node for `plane` and resolves once its Node is Ready. The kubelet reaches the apiserver at the
 * `kubernetes` Service's address on the node's loopback, relayed to the apiserver's loopback port; the
 * apiserver reaches the kubelet at the node's address through the veth pair.
 */
export async function startNode(plane: ControlPlane, options: NodeOptions = {}): Promise<LocalNode> {
  const binary = await resolveControlPlaneBinary();
  const tools = await resolveHostTools();
  const pauseArchive = await resolvePauseImage();
  await sweepStaleCgroups();
  const temporary = options.dataDir === undefined;
  const dataDir = options.dataDir ?? (await mkdtemp(join(tmpdir(), NAME_PREFIX)));
  const layout = nodeLayout(dataDir);
  for (const dir of [
    layout.cniConfDir,
    layout.cniIpamDir,
    layout.kubeletRoot,
    layout.podLogsDir,
    layout.pki,
  ]) {
    await mkdir(dir, { recursive: true });
  }
  const node = new Node(plane, binary, tools, layout, await readSysctls(), temporary);
  try {
    await node.start(pauseArchive, options.readyTimeoutMs ?? DEFAULT_READY_TIMEOUT_MS);
  } catch (error) {
    await node.teardown();
    throw error;
  }
  return node;
}

class Node implements LocalNode {
  readonly dataDir: string;
  readonly containerdSocket: string;
  readonly kubeletLog: string;
  readonly containerdLog: string;
  readonly hostSysctls: SysctlValues;
  readonly #plane: ControlPlane;
  readonly #binary: string;
  readonly #tools: HostTools;
  readonly #layout: NodeLayout;
  readonly #temporary: boolean;
  #network: NodeNetwork | undefined;
  #containerd: ServerProcess | undefined;
  #forward: ServerProcess | undefined;
  #kubelet: ServerProcess | undefined;
  #stopped: Promise<void> | undefined;

  constructor(
    plane: ControlPlane,
    binary: string,
    tools: HostTools,
    layout: NodeLayout,
    hostSysctls: SysctlValues,
    temporary: boolean,
  ) {
    this.#plane = plane;
    this.#binary = binary;
    this.#tools = tools;
    this.#layout = layout;
    this.#temporary = temporary;
    this.hostSysctls = hostSysctls;
    this.dataDir = layout.dataDir;
    this.containerdSocket = layout.containerdSocket;
    this.kubeletLog = layout.kubeletLog;
    this.containerdLog = layout.containerdLog;
  }

  get name(): string {
    return `${NAME_PREFIX}${this.#networkOrThrow.index}`;
  }

  get address(): string {
    return this.#networkOrThrow.nodeAddress;
  }

  get hostAddress(): string {
    return this.#networkOrThrow.hostAddress;
  }

  get podSubnet(): string {
    return this.#networkOrThrow.podSubnet;
  }

  get #networkOrThrow(): NodeNetwork {
    if (!this.#network) throw new Error('the node has not finished starting');
    return this.#network;
  }

  async start(pauseArchive: string, readyTimeoutMs: number): Promise<void> {
    const layout = this.#layout;
    await writeFile(
      layout.containerdConfig,
      containerdConfig({
        layout,
        sandboxImage: SANDBOX_IMAGE,
        runc: this.#tools.runc,
        cniBinDir: this.#tools.cniBinDir,
        restrictOomScoreAdj: !mayLowerOomScoreAdj(await readFile('/proc/self/status', 'utf8')),
      }),
    );
    // No nameserver: pods resolve nothing, as nothing here serves DNS.
    await writeFile(layout.resolvConf, '');
    const containerd = this.#startContainerd();
    const pid = containerd.pid;
    if (pid === undefined) throw await containerd.failure('could not be started');
    this.#network = await attachNetwork(pid);
    const network = this.#network;
    // Written beside and renamed: containerd watches the directory and must never read half a file.
    const cniFile = join(layout.cniConfDir, `10-${CNI_NETWORK_NAME}.conflist`);
    await writeFile(`${cniFile}.partial`, cniConfig(network, layout.cniIpamDir));
    await rename(`${cniFile}.partial`, cniFile);
    await createCgroupRoot(this.name);
    await waitUntilReady(containerd, () => this.#containerdReady(), readyTimeoutMs);
    await this.importImage(pauseArchive);
    await this.#startForward(pid, readyTimeoutMs);
    const certificates = await issueNodeCertificates(
      this.#plane.layout,
      layout.pki,
      this.name,
      network.nodeAddress,
    );
    await writeFile(
      layout.kubeletKubeconfig,
      kubeletKubeconfig(`https://${KUBERNETES_SERVICE_IP}:443`, this.#plane.servingCaPem, certificates),
      { mode: 0o600 },
    );
    await writeFile(
      layout.kubeletConfig,
      kubeletConfig({ layout, certificates, nodeAddress: network.nodeAddress, cgroupRoot: `/${this.name}` }),
    );
    const kubelet = new ServerProcess({
      binary: this.#binary,
      component: 'kubelet',
      wrapper: ['nsenter', `--target=${pid}`, '--mount', '--net', '--'],
      args: [
        `--config=${layout.kubeletConfig}`,
        `--kubeconfig=${layout.kubeletKubeconfig}`,
        `--hostname-override=${this.name}`,
        `--node-ip=${network.nodeAddress}`,
        `--root-dir=${layout.kubeletRoot}`,
      ],
      logPath: layout.kubeletLog,
    });
    this.#kubelet = kubelet;
    await waitUntilReady(kubelet, kubeletHealthy(network.nodeAddress), readyTimeoutMs);
    await waitUntilReady(kubelet, this.#nodeReady(), readyTimeoutMs);
    const changed = await restoreSysctls(this.hostSysctls);
    if (changed.length > 0)
      throw new Error(`the node changed host kernel settings (put back): ${changed.join(', ')}`);
  }

  /**
   * containerd under the supervisor, in new network and mount namespaces (`unshare`), where the
   * supervisor hides the fixed host paths and the kernel settings before it starts containerd.
   */
  #startContainerd(): ServerProcess {
    this.#containerd = new ServerProcess({
      binary: this.#binary,
      component: 'containerd',
      mode: 'supervise',
      wrapper: ['unshare', '--net', '--mount', '--propagation', 'slave', '--'],
      args: [
        ...PRIVATE_DIRS.flatMap((dir) => ['--tmpfs', dir]),
        ...KUBELET_SYSCTLS.flatMap((name) => ['--freeze-sysctl', name]),
        '--',
        this.#tools.containerd,
        `--config=${this.#layout.containerdConfig}`,
      ],
      logPath: this.#layout.containerdLog,
      stopGraceMs: CONTAINERD_STOP_GRACE_MS,
    });
    return this.#containerd;
  }

  /** The relay from the `kubernetes` Service's address in the node's namespace to the apiserver. */
  async #startForward(pid: number, readyTimeoutMs: number): Promise<void> {
    const apiserver = new URL(this.#plane.server);
    const forward = new ServerProcess({
      binary: this.#binary,
      component: 'forward',
      args: [
        `--netns=/proc/${pid}/ns/net`,
        `--listen=${KUBERNETES_SERVICE_IP}:443`,
        `--to=${apiserver.host}`,
      ],
      logPath: this.#layout.forwardLog,
    });
    this.#forward = forward;
    // It says so once it listens; it cannot be dialled from here, outside the namespace.
    await waitUntilReady(forward, () => logSays(this.#layout.forwardLog, 'forward: '), readyTimeoutMs);
  }

  async #containerdReady(): Promise<true | string> {
    const plugins = await run(this.#tools.ctr, ['--address', this.containerdSocket, 'plugins', 'ls']);
    return /io\.containerd\.grpc\.v1\s+cri\s+\S+\s+ok/.test(plugins) || 'the CRI plugin is not loaded yet';
  }

  ctr(args: readonly string[]): Promise<string> {
    return run(this.#tools.ctr, ['--address', this.containerdSocket, '--namespace', 'k8s.io', ...args]);
  }

  async importImage(archive: string, reference?: string): Promise<void> {
    const baseName = reference === undefined ? [] : ['--base-name', imageBaseName(reference)];
    await this.ctr(['images', 'import', ...baseName, archive]);
  }

  #nodeReady(): Probe {
    const api = this.#plane.kubeConfig.makeApiClient(CoreV1Api);
    return async () => {
      const node = await api.readNode({ name: this.name }).catch(() => undefined);
      const ready = node?.status?.conditions?.find((condition) => condition.type === 'Ready');
      return (
        ready?.status === 'True' ||
        `Node ${this.name} Ready: ${ready?.status ?? 'not registered'} ${ready?.message ?? ''}`
      );
    };
  }

  stop(): Promise<void> {
    this.#stopped ??= this.teardown().then(async () => {
      if (this.#temporary) await rm(this.dataDir, { recursive: true, force: true });
    });
    return this.#stopped;
  }

  /**
   * Stops what was started, newest first, and undoes the host changes; keeps the data directory. Every
   * step runs even if one before it failed: a failure is reported after the others have had their turn.
   */
  async teardown(): Promise<void> {
    const network = this.#network;
    const steps: Array<() => Promise<unknown>> = [
      async () => this.#kubelet?.stop(),
      async () => this.#containerd?.stop(),
      async () => this.#forward?.stop(),
      async () => network && detachNetwork(network),
      async () => network && removeCgroupRoot(this.name),
      // The Node object goes too, when the plane is still there to be told.
      async () =>
        network &&
        this.#plane.kubeConfig
          .makeApiClient(CoreV1Api)
          .deleteNode({ name: this.name })
          .catch(() => undefined),
      async () => {
        const changed = await restoreSysctls(this.hostSysctls);
        if (changed.length > 0) {
          throw new Error(`the node had changed host kernel settings (put back): ${changed.join(', ')}`);
        }
      },
    ];
    const failures: unknown[] = [];
    for (const step of steps) await step().catch((error: unknown) => failures.push(error));
    if (failures.length === 1) throw failures[0];
    if (failures.length > 1) throw new AggregateError(failures, 'the node did not stop cleanly');
  }
}

/** `registry/repository` of `registry/repository:tag`: a colon after the last slash starts the tag. */
export function imageBaseName(reference: string): string {
  const tag = reference.lastIndexOf(':');
  return tag > reference.lastIndexOf('/') ? reference.slice(0, tag) : reference;
}

function kubeletHealthy(address: string): Probe {
  return async () => {
    const response = await fetch(`http://${address}:${KUBELET_HEALTHZ_PORT}/healthz`, {
      signal: AbortSignal.timeout(2000),
    });
    return response.ok || `GET /healthz answered ${response.status}: ${await response.text()}`;
  };
}

async function logSays(path: string, text: string): Promise<true | string> {
  return (await readFile(path, 'utf8')).includes(text) || `no "${text}" in ${path} yet`;
}

/** Removes the cgroup trees of nodes whose network is gone: they died before they could remove them. */
async function sweepStaleCgroups(): Promise<void> {
  for (const index of await cgroupRoots(NAME_PREFIX)) {
    if (!(await networkExists(index))) await removeCgroupRoot(`${NAME_PREFIX}${index}`);
  }
}
