import type { LegacyPod, Pod, PodRuntime, podCommonFields } from '../../api/schemas/index.ts';
import { usd, VOLUME_PRICE_PER_GB_HOUR } from '../catalog.ts';
import { hashUnit } from '../random.ts';
import { type PodRecord, runningMillis } from './pod.ts';

/* The API's views of a pod record: v2 object, v2 list item, v1 object, runtime. */

const NETWORK = { upload: '1000', download: '1000', diskRead: '2000', diskWrite: '2000' };
const PROXY_DOMAIN = 'proxy.gpucloud.sim';

/** The fields v1 and v2 pod objects share, with the same type. */
type CommonFields = Pick<Pod, keyof typeof podCommonFields>;

function common(pod: PodRecord): CommonFields {
  const { spec, model } = pod;
  const running = pod.status === 'RUNNING' || pod.status === 'DEGRADED';
  return {
    officialImage: 'CUSTOM',
    imagePublicType: spec.imagePublicType,
    image: spec.image,
    imageRegistry: spec.imageRegistry,
    imageRegistryUsername: spec.imageRegistryUsername,
    resourceType: spec.resourceType,
    gpuType: model.gpuType,
    gpuDisplayName: model.displayName,
    gpuCount: spec.gpuCount,
    shmInGb: pod.shmInGb,
    singleCardVramInGb: model.gpuMemoryInGb,
    singleCardRamInGb: model.ramPerGpuInGb,
    singleCardVcpu: model.vcpuPerGpu,
    location: null,
    region: pod.region,
    cloudType: model.cloudType,
    containerVolumeInGb: pod.containerVolumeInGb,
    initializationCommand: spec.initializationCommand,
    environmentVars: pod.environmentVars.map((env) => ({ ...env })),
    expose: spec.expose.map((port, index) => ({
      port: port.port,
      proxyPort: 30_000 + ((Number(pod.id) * 8 + index) % 30_000),
      protocol: port.protocol,
      host: `${pod.id}-${port.port}.${PROXY_DOMAIN}`,
      healthy: pod.status === 'RUNNING',
      ingressUrl: `https://${pod.id}-${port.port}.${PROXY_DOMAIN}`,
      serviceName: null,
    })),
    sshCmd: running ? `ssh root@${pod.id}.ssh.gpucloud.sim -p 22` : null,
    status: pod.status,
    isSpot: spec.isSpot,
    internalIp: running ? pod.internalIp : null,
  };
}

/** A stable id for an image name. */
function imageId(image: string): string {
  return String(1 + Math.floor(hashUnit('image', image) * 1_000_000));
}

function prices(pod: PodRecord) {
  return {
    singleCardPrice: usd(pod.pricePerGpuHour),
    containerVolumePrice: usd(pod.containerVolumeInGb * VOLUME_PRICE_PER_GB_HOUR),
  };
}

function persistentVolumeInGb(pod: PodRecord): number | null {
  return pod.spec.volumes.length === 0
    ? null
    : pod.spec.volumes.reduce((sum, volume) => sum + volume.volumeSize, 0);
}

/**
 * The v2 pod object. `nodePool` and `reserveActive` come with get and list only, as the service
 * sends them. List items are this object too: the list schema's encoding keeps only their fields.
 */
export function podView(pod: PodRecord, forGet: boolean): Pod {
  const { spec } = pod;
  const size = persistentVolumeInGb(pod);
  return {
    ...common(pod),
    id: pod.id,
    orgId: pod.orgId,
    applicantId: pod.applicantId,
    name: spec.name,
    imageId: imageId(spec.image),
    persistentVolumeInGb: size,
    persistentMountPath: spec.volumes[0]?.mountPath ?? null,
    networkUploadMbps: NETWORK.upload,
    networkDownloadMbps: NETWORK.download,
    diskReadSpeedMbps: NETWORK.diskRead,
    diskWriteSpeedMbps: NETWORK.diskWrite,
    ...prices(pod),
    persistentVolumePrice: usd((size ?? 0) * VOLUME_PRICE_PER_GB_HOUR),
    callbackUrl: spec.callbackUrl,
    createdAt: pod.createdAt,
    updatedAt: pod.updatedAt,
    volumes: spec.volumes.map((volume) => ({ id: volume.id, mountPath: volume.mountPath })),
    desiredState: pod.desiredState,
    ...(forGet ? { nodePool: 'shared', reserveActive: false } : {}),
  };
}

/** The v1 pod object: the v1 surface shows INITIALIZE for INITIALIZING. */
export function legacyPodView(pod: PodRecord): LegacyPod {
  const base = common(pod);
  return {
    ...base,
    status: pod.status === 'INITIALIZING' ? 'INITIALIZE' : pod.status,
    id: pod.id,
    orgId: pod.orgId,
    applicantId: pod.applicantId,
    imageId: imageId(pod.spec.image),
    podName: pod.spec.name,
    networkUploadMbps: NETWORK.upload,
    networkDownloadMbps: NETWORK.download,
    diskReadSpeedMbps: NETWORK.diskRead,
    diskWriteSpeedMbps: NETWORK.diskWrite,
    ...prices(pod),
    createdAt: pod.createdAt,
    updatedAt: pod.updatedAt,
    persistentVolumes: pod.spec.volumes.map((volume) => ({ ...volume })),
  };
}

export function podRuntimeView(pod: PodRecord, now: number): PodRuntime {
  const millis = runningMillis(pod, now);
  return {
    id: pod.id,
    name: pod.spec.name,
    status: pod.status,
    createdAt: pod.createdAt,
    updatedAt: pod.updatedAt,
    runningMillis: millis,
    runningSeconds: Math.floor(millis / 1000),
  };
}
