import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { z } from 'zod';
import { operations } from '../../src/api/operations.ts';

/*
 * Responses: canonical wire payloads (as the service sends them) decode to the application form and
 * encode back to exactly the same wire payload.
 */

const vmWire = {
  id: 9007199254740,
  orgId: 'org-1',
  name: 'trainer',
  gpuDisplayName: 'H100 80GB',
  ipAddress: '203.0.113.7',
  domainName: 'vm-1.example.net',
  cpuCores: 16,
  memoryInGb: '128',
  gpuCount: 2,
  gpuMemoryInGb: '80',
  region: 'us-east-1',
  storageInGb: '500',
  notebookUrl: 'https://nb.example.net/1',
  sshTemplate: 'ssh root@{ip}',
  status: 'RUNNING',
  createdAt: 1700000000000,
  terminatedAt: null,
  updatedAt: 1700000001000,
  osInfo: 'Ubuntu 22.04',
  gpuType: 'H100',
  isSpot: false,
};

const exposeWire = {
  port: 8888,
  proxyPort: null,
  protocol: 'HTTP',
  host: 'pod-1.example.net',
  healthy: true,
  ingressUrl: 'https://pod-1.example.net',
  serviceName: null,
};

const podCommonWire = {
  officialImage: 'CUSTOM',
  imagePublicType: 'PUBLIC',
  image: 'pytorch:2',
  imageRegistry: 'docker.io',
  imageRegistryUsername: null,
  resourceType: 'GPU',
  gpuType: 'A100',
  gpuDisplayName: 'A100 40GB',
  gpuCount: 4,
  shmInGb: 8,
  singleCardVramInGb: 40,
  singleCardRamInGb: 64,
  singleCardVcpu: 8,
  location: null,
  region: 'eu-west-1',
  cloudType: 'SECURE',
  containerVolumeInGb: 50,
  initializationCommand: 'sleep infinity',
  environmentVars: [{ key: 'POD_ID', value: '7001' }],
  expose: [exposeWire],
  sshCmd: null,
  status: 'INITIALIZING',
  isSpot: true,
  internalIp: null,
};

const podWire = {
  ...podCommonWire,
  id: '7001',
  orgId: '42',
  applicantId: '43',
  name: 'notebook',
  imageId: '5',
  persistentVolumeInGb: null,
  persistentMountPath: null,
  networkUploadMbps: '1000',
  networkDownloadMbps: '1000',
  diskReadSpeedMbps: '2000.5',
  diskWriteSpeedMbps: '1500',
  singleCardPrice: '1.25',
  persistentVolumePrice: '0',
  containerVolumePrice: '0.0001',
  callbackUrl: 'https://hooks.example.net/pods',
  createdAt: '1700000000000',
  updatedAt: '1700000005000',
  volumes: [{ id: 'vol-1', mountPath: '/data' }],
  desiredState: null,
  nodePool: 'shared',
  reserveActive: false,
};

const legacyPodWire = {
  ...podCommonWire,
  status: 'INITIALIZE',
  id: 7001,
  orgId: 42,
  applicantId: 43,
  imageId: 5,
  podName: 'notebook',
  networkUploadMbps: 1000,
  networkDownloadMbps: 1000,
  diskReadSpeedMbps: 2000.5,
  diskWriteSpeedMbps: 1500,
  singleCardPrice: 1.25,
  containerVolumePrice: 0.0001,
  createdAt: '2023-11-14T22:13:20.000Z',
  updatedAt: '2023-11-14T22:13:25.000Z',
  persistentVolumes: [
    {
      id: 'pv-1',
      name: 'data',
      volumeType: 'CloudStorage',
      mountMode: 'Data',
      volumeSize: 100,
      volumePrice: 0.02,
      mountPath: '/data',
      cloudStorageType: 'R2',
      systemVolumeType: 'Ceph',
    },
  ],
};

const vmTypesWire = [
  {
    gpuType: 'H100',
    regions: [
      {
        region: 'us-east-1',
        types: [
          {
            vmTypeId: 3,
            gpuCount: 1,
            pricePerHour: '2.49',
            supportSpot: true,
            spotPricePerHour: '1.10',
            currency: 'USD',
            displayName: '1x H100',
            cpuCores: 16,
            memoryInGb: '128',
            gpuMemoryInGb: '80',
            gpuTotalMemoryInGb: '80',
            storageType: 'NVMe',
            storageCapacityInGb: '500',
            osName: 'Ubuntu',
            osVersion: '22.04',
            supportOnDemand: true,
            ondemandAvailable: true,
            spotAvailable: false,
          },
        ],
      },
    ],
  },
];

const endpointWire = {
  id: '880001',
  name: 'sdxl',
  creator: 'alice',
  domain: null,
  imageRegistry: 'docker.io',
  image: 'sdxl:1',
  resources: [
    {
      region: 'us-east-1',
      regionDisplayName: 'US East',
      gpuType: 'L40S',
      gpuDisplayName: 'L40S 48GB',
      gpuCount: 1,
      singleCardVramInGb: 48,
      singleCardVcpu: 8,
      singleCardRamInGb: 64,
    },
  ],
  minSingleCardVramInGb: 24,
  minSingleCardVcpu: 4,
  minSingleCardRamInGb: 32,
  credentialId: null,
  containerVolumeInGb: 20,
  initializationCommand: '',
  environmentVars: [{ key: 'MODE', value: 'fast' }],
  expose: { port: 8000, protocol: 'http' },
  totalWorkers: 2,
  runningWorkers: 0,
  cost: '0',
  perSecondPrice: '0.0003',
  perHourPrice: '1.08',
  serviceMode: 'QUEUE',
  webhook: 'https://hooks.example.net/tasks',
  status: 'INITIALIZING',
};

const taskSummaryWire = {
  taskId: 'job_1',
  endpointId: '880001',
  endpointName: 'sdxl',
  status: 'DELIVERED',
  workerUrl: 'http://10.0.0.5:8000',
  webhook: null,
  deliveryStatus: 'INIT',
  deliveryAttempts: 0,
  error: null,
  createdAt: '1700000000000',
  updatedAt: '1700000000500',
  deliveredAt: null,
};

const series = (name: string, labels: Record<string, string>, latest?: number) => ({
  metric_name: name,
  series: [
    {
      labels,
      data_points: [
        { timestamp: 1700000000000, value: 0.5 },
        { timestamp: 1700000030000, value: 0.75 },
      ],
      ...(latest === undefined ? {} : { latest_total: latest }),
    },
  ],
});

/** One canonical wire payload for the `data` of every operation. */
const dataSamples: ReadonlyArray<{ schema: z.ZodType; name: string; wire: unknown }> = [
  { name: 'vms.types', schema: operations.vms.types.data, wire: vmTypesWire },
  { name: 'vms.get', schema: operations.vms.get.data, wire: vmWire },
  {
    name: 'vms.list',
    schema: operations.vms.list.data,
    wire: { items: [vmWire], page: 1, size: 10, total: 1, pages: 1 },
  },
  { name: 'vms.terminate', schema: operations.vms.terminate.data, wire: true },
  { name: 'pods.get', schema: operations.pods.get.data, wire: podWire },
  {
    name: 'pods.list',
    schema: operations.pods.list.data,
    wire: [
      {
        id: '7001',
        orgId: '42',
        applicantId: '43',
        name: 'notebook',
        image: 'pytorch:2',
        imageRegistry: 'docker.io',
        gpuType: 'A100',
        gpuDisplayName: 'A100 40GB',
        gpuCount: 4,
        region: 'eu-west-1',
        cloudType: 'COMMUNITY',
        containerVolumeInGb: 50,
        status: 'PAUSED',
        isSpot: false,
        callbackUrl: null,
        createdAt: '1700000000000',
        volumes: [],
        internalIp: '10.1.2.3',
        nodePool: 'reserved',
        reserveActive: true,
      },
    ],
  },
  { name: 'pods.delete', schema: operations.pods.delete.data, wire: null },
  {
    name: 'pods.searchGpus',
    schema: operations.pods.searchGpus.data,
    wire: {
      items: [
        {
          gpuType: 'A100',
          displayName: 'A100 40GB',
          gpuMemoryInGb: 40,
          region: 'eu-west-1',
          cloudType: 'SECURE',
          acceleratorVendor: 'NVIDIA',
          isSpot: false,
          status: 'AVAILABLE',
          maxGpuCount: 8,
          availableGpuCounts: [1, 2, 4, 8],
          ramPerGpuInGb: 64,
          vcpuPerGpu: 8,
          localDiskPerGpuInGb: 200,
          gpuCountOptions: [
            {
              gpuCount: 1,
              available: true,
              totalGpuMemoryInGb: 40,
              totalRamInGb: 64,
              totalVcpu: 8,
              totalLocalDiskInGb: 200,
              containerVolume: { minInGb: 20, maxInGb: 200 },
              price: {
                pricePerGpuPerHour: '1.25',
                gpuPricePerHour: '1.25',
                containerVolumePricePerGbPerHour: '0.0001',
                currency: 'USD',
              },
            },
          ],
        },
      ],
      page: '1',
      size: '10',
      total: '1',
      pages: '1',
    },
  },
  {
    name: 'pods.logs',
    schema: operations.pods.logs.data,
    wire: {
      items: [{ timestamp: '2023-11-14T22:13:20.123456789Z', level: 'UNKNOWN', content: 'ready' }],
      nextCursor: null,
    },
  },
  {
    name: 'pods.runtime',
    schema: operations.pods.runtime.data,
    wire: {
      id: '7001',
      name: 'notebook',
      status: 'RUNNING',
      createdAt: '1700000000000',
      updatedAt: '1700000060000',
      runningMillis: '60000',
      runningSeconds: '60',
    },
  },
  { name: 'serverless.create', schema: operations.serverless.create.data, wire: endpointWire },
  { name: 'serverless.list', schema: operations.serverless.list.data, wire: [endpointWire] },
  {
    name: 'serverless.get',
    schema: operations.serverless.get.data,
    wire: { id: '880001', name: 'sdxl', status: 1, domain: 'sdxl.example.net' },
  },
  {
    name: 'serverless.tasks.submit',
    schema: operations.serverless.tasks.submit.data,
    wire: { taskId: 'job_1' },
  },
  {
    name: 'serverless.tasks.list',
    schema: operations.serverless.tasks.list.data,
    wire: { items: [taskSummaryWire], page: '1', size: '10', total: '1', pages: '1' },
  },
  {
    name: 'serverless.tasks.get',
    schema: operations.serverless.tasks.get.data,
    wire: {
      ...taskSummaryWire,
      status: 'SUCCESS',
      deliveryStatus: 'SUCCESS',
      deliveryAttempts: 1,
      deliveredAt: '1700000001000',
      input: { prompt: 'a cat' },
      output: { url: 'https://cdn.example.net/1.png' },
      headers: { 'content-type': 'application/json' },
    },
  },
  {
    name: 'serverless.tasks.count',
    schema: operations.serverless.tasks.count.data,
    wire: { processing: '2', success: '10' },
  },
  { name: 'metrics.cpu', schema: operations.metrics.cpu.data, wire: series('cpu_usage', { pod_id: '7001' }) },
  {
    name: 'metrics.gpu',
    schema: operations.metrics.gpu.data,
    wire: series('gpu_utilization', { pod_id: '7001', gpu_show_index: '0' }),
  },
  {
    name: 'metrics.memory',
    schema: operations.metrics.memory.data,
    wire: series('memory_usage', { pod_id: '7001' }, 68719476736),
  },
  {
    name: 'metrics.gpuMemory',
    schema: operations.metrics.gpuMemory.data,
    wire: series('gpu_memory', { pod_id: '7001', gpu_show_index: '1' }, 42949672960),
  },
  {
    name: 'metrics.storage',
    schema: operations.metrics.storage.data,
    wire: {
      pod_id: '7001',
      ephemeral_storage: {
        used_bytes: 1073741824,
        total_bytes: 53687091200,
        usage_ratio: 0.02,
        last_updated: 1700000000000,
      },
    },
  },
  {
    name: 'legacy.vms.get',
    schema: operations.legacy.vms.get.data,
    wire: { ...vmWire, name: undefined, nickname: 'trainer', isSpot: 1, status: 'SOMETHING_NEW' },
  },
  {
    name: 'legacy.vms.list',
    schema: operations.legacy.vms.list.data,
    wire: {
      records: [{ ...vmWire, name: undefined, nickname: 'trainer', isSpot: 0 }],
      pageNumber: 1,
      pageSize: 10,
      totalPage: 1,
      totalRow: 1,
    },
  },
  { name: 'legacy.vms.types', schema: operations.legacy.vms.types.data, wire: vmTypesWire },
  { name: 'legacy.pods.create', schema: operations.legacy.pods.create.data, wire: 7001 },
  { name: 'legacy.pods.get', schema: operations.legacy.pods.get.data, wire: legacyPodWire },
  { name: 'legacy.pods.list', schema: operations.legacy.pods.list.data, wire: [legacyPodWire] },
];

/** JSON as it travels: undefined members vanish. */
const asJson = (value: unknown): unknown => JSON.parse(JSON.stringify(value));

describe('response schemas', () => {
  for (const { name, schema, wire } of dataSamples) {
    it(`${name}: wire → decode → encode gives the same wire payload`, () => {
      const json = asJson(wire);
      assert.deepEqual(asJson(schema.encode(schema.decode(json))), json);
    });
  }

  it('v2 pod: 64-bit strings become numbers and ids stay strings', () => {
    const decoded = operations.pods.get.data.decode(podWire);
    assert.equal(decoded.id, '7001');
    assert.equal(decoded.orgId, '42');
    assert.equal(decoded.createdAt, 1700000000000);
    assert.equal(decoded.singleCardPrice, '1.25');
  });

  it('v2 VM: integer id becomes a string, timestamps stay numbers', () => {
    const decoded = operations.vms.get.data.decode(vmWire);
    assert.equal(decoded.id, '9007199254740');
    assert.equal(decoded.createdAt, 1700000000000);
  });

  it('v1 pod reads like a v2 pod: string ids and prices, ISO times as epoch ms', () => {
    const decoded = operations.legacy.pods.get.data.decode(legacyPodWire);
    assert.equal(decoded.id, '7001');
    assert.equal(decoded.imageId, '5');
    assert.equal(decoded.singleCardPrice, '1.25');
    assert.equal(decoded.diskReadSpeedMbps, '2000.5');
    assert.equal(decoded.createdAt, 1700000000000);
    assert.equal(decoded.status, 'INITIALIZE');
  });

  it('v1 VM: integer isSpot becomes a boolean and nickname is kept', () => {
    const decoded = operations.legacy.vms.get.data.decode({ ...vmWire, nickname: 'n', isSpot: 1 });
    assert.equal(decoded.isSpot, true);
    assert.equal(decoded.nickname, 'n');
    assert.equal(decoded.status, 'RUNNING');
  });

  it('v1 create answers with the pod id, seen as a string', () => {
    assert.equal(operations.legacy.pods.create.data.decode(7001), '7001');
  });

  it('64-bit numbers are read in either JSON form', () => {
    const decoded = operations.pods.get.data.decode({ ...podWire, id: 7001, createdAt: 1700000000000 });
    assert.equal(decoded.id, '7001');
    assert.equal(decoded.createdAt, 1700000000000);
  });

  it('statuses the client does not know pass through instead of failing the read', () => {
    assert.equal(operations.pods.get.data.decode({ ...podWire, status: 'MIGRATING' }).status, 'MIGRATING');
    assert.equal(operations.vms.get.data.decode({ ...vmWire, status: 'HIBERNATED' }).status, 'HIBERNATED');
    const task = operations.serverless.tasks.list.data.decode({
      items: [{ ...taskSummaryWire, status: 'CANCELLED', deliveryStatus: 'SKIPPED' }],
      page: '1',
      size: '10',
      total: '1',
      pages: '1',
    });
    assert.equal(task.items[0]?.status, 'CANCELLED');
    assert.equal(task.items[0]?.deliveryStatus, 'SKIPPED');
  });

  it('reduced endpoint: numeric status reads as the status name, an unknown index as its number', () => {
    const schema = operations.serverless.get.data;
    const summary = { id: '1', name: 'e', domain: null };
    const statuses = [0, 1, 2, 3, 4].map((status) => schema.decode({ ...summary, status }).status);
    assert.deepEqual(statuses, ['INITIALIZING', 'RUNNING', 'STOPPING', 'STOPPED', 'FAILED']);
    assert.equal(schema.decode({ ...summary, status: 9 }).status, '9');
    assert.equal(schema.encode({ ...summary, status: 'STOPPED' }).status, 3);
    assert.equal(schema.encode({ ...summary, status: '9' }).status, 9);
  });

  it('operations that return nothing read any payload as null', () => {
    assert.equal(operations.pods.pause.data.decode(null), null);
    assert.equal(operations.pods.pause.data.decode(undefined), null);
    assert.equal(operations.legacy.vms.terminate.data.decode(true), null);
  });

  it('a malformed payload is rejected with the path of the bad field', () => {
    const result = operations.pods.get.data.safeDecode({ ...podWire, createdAt: 'yesterday' });
    assert.equal(result.success, false);
    assert.deepEqual(result.error?.issues[0]?.path, ['createdAt']);
  });

  it('a metric response with the wrong metric name is rejected', () => {
    assert.equal(operations.metrics.cpu.data.safeParse(series('gpu_memory', {})).success, false);
  });
});
