import type { LegacyPodCreateRequest, PodCreateRequest } from '../../api/schemas/index.ts';
import type { PodSpec } from './pod.ts';

/** What v1 and v2 pod create requests share, with the service's defaults. */
function sharedSpec(request: PodCreateRequest | LegacyPodCreateRequest) {
  return {
    image: request.image,
    imageRegistry: request.imageRegistry ?? '',
    imagePublicType: request.imagePublicType ?? 'PUBLIC',
    resourceType: request.resourceType ?? 'GPU',
    gpuType: request.gpuType,
    gpuCount: request.gpuCount,
    isSpot: request.isSpot ?? false,
    maxPrice: request.maxPrice,
    shmInGb: request.shmInGb,
    minSingleCardRamInGb: request.minSingleCardRamInGb,
    minSingleCardVramInGb: request.minSingleCardVramInGb,
    minSingleCardVcpu: request.minSingleCardVcpu,
    containerVolumeInGb: request.containerVolumeInGb,
    initializationCommand: request.initializationCommand ?? '',
    environmentVars: request.environmentVars ?? [],
    expose: request.expose ?? [],
    callbackUrl: request.callbackUrl ?? null,
  } as const;
}

export function specFromV2(request: PodCreateRequest): PodSpec {
  return {
    ...sharedSpec(request),
    name: request.name,
    imageRegistryUsername: null,
    registryAuthId: request.containerRegistryAuthId ?? null,
    regions: request.regions ?? [],
    // v2 names a volume by id and mount path; the v1 view shows the rest with the service's defaults.
    volumes: (request.volumes ?? []).map(({ id, mountPath }) => ({
      id,
      mountPath,
      name: id,
      volumeType: 'CloudStorage',
      mountMode: 'Data',
      volumeSize: 0,
      volumePrice: 0,
      cloudStorageType: 'R2',
      systemVolumeType: 'Ceph',
    })),
  };
}

export function specFromV1(request: LegacyPodCreateRequest): PodSpec {
  const regions = [...(request.region ? [request.region] : []), ...(request.regionList ?? [])];
  return {
    ...sharedSpec(request),
    name: request.podName,
    imageRegistryUsername: request.imageRegistryUsername ?? null,
    registryAuthId: request.credentialId ?? null,
    regions: [...new Set(regions)],
    volumes: request.persistentVolumes ?? [],
  };
}
