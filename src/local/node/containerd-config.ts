import type { NodeLayout } from './layout.ts';

export interface ContainerdSettings {
  layout: NodeLayout;
  sandboxImage: string;
  runc: string;
  cniBinDir: string;
  /**
   * Without CAP_SYS_RESOURCE (some sandboxed machines drop it, even for root) no process may lower its
   * oom_score_adj, and runc fails to start a container the kubelet asks a negative one for (every pod's
   * sandbox): containerd then caps it at its own, as it does when rootless.
   */
  restrictOomScoreAdj: boolean;
}

/**
 * containerd 1.6's configuration (version 2) for the node: every path in the node's data directory, the
 * CRI plugin with runc on cgroupfs (SystemdCgroup = false: no systemd here, and the kubelet's driver is
 * cgroupfs too), the node's own sandbox image, and the plugins that would write to fixed host paths off.
 * The streaming server (exec, attach, port-forward) listens on the node's loopback, reached by the kubelet.
 */
export function containerdConfig(settings: ContainerdSettings): string {
  const { layout } = settings;
  const cri = 'plugins."io.containerd.grpc.v1.cri"';
  return `version = 2
root = ${toml(layout.containerdRoot)}
state = ${toml(layout.containerdState)}
disabled_plugins = [
  "io.containerd.internal.v1.opt",
  "io.containerd.snapshotter.v1.aufs",
  "io.containerd.snapshotter.v1.btrfs",
  "io.containerd.snapshotter.v1.devmapper",
  "io.containerd.snapshotter.v1.zfs",
  "io.containerd.tracing.processor.v1.otlp",
]

[grpc]
  address = ${toml(layout.containerdSocket)}

[ttrpc]
  address = ""

[debug]
  address = ""

[metrics]
  address = ""

[${cri}]
  sandbox_image = ${toml(settings.sandboxImage)}
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
  enable_selinux = false
  restrict_oom_score_adj = ${settings.restrictOomScoreAdj}

[${cri}.containerd]
  snapshotter = "overlayfs"
  default_runtime_name = "runc"

[${cri}.containerd.runtimes.runc]
  runtime_type = "io.containerd.runc.v2"

[${cri}.containerd.runtimes.runc.options]
  SystemdCgroup = false
  BinaryName = ${toml(settings.runc)}

[${cri}.cni]
  bin_dir = ${toml(settings.cniBinDir)}
  conf_dir = ${toml(layout.cniConfDir)}
  max_conf_num = 1
`;
}

/** A TOML basic string (JSON's escapes are TOML's for the characters a path may hold). */
function toml(value: string): string {
  return JSON.stringify(value);
}

const CAP_SYS_RESOURCE = 24n;

/** Whether this process may lower an oom_score_adj: CAP_SYS_RESOURCE in its effective set. */
export function mayLowerOomScoreAdj(procStatus: string): boolean {
  const effective = /^CapEff:\s*([0-9a-f]+)$/m.exec(procStatus)?.[1];
  return effective !== undefined && ((BigInt(`0x${effective}`) >> CAP_SYS_RESOURCE) & 1n) === 1n;
}
