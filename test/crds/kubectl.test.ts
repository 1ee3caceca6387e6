import assert from 'node:assert/strict';
import { before, describe, test } from 'node:test';
import { ApiextensionsV1Api, CoreV1Api, KubernetesObjectApi } from '@kubernetes/client-node';
import { API_VERSION, kinds } from '../../src/resources/kinds.ts';
import { useControlPlane } from '../support/control-plane.ts';
import { installCrds } from '../support/crds.ts';
import { eventually } from '../support/eventually.ts';
import { CustomResources, createNamespace, kubectl } from './cluster.ts';
import { readExamples } from './examples.ts';

// The CRDs as a user meets them: installed, the examples applied, read back through kubectl.

const controlPlane = useControlPlane();
const NAMESPACE = 'crd-kubectl';
let resources: CustomResources;

// Inside a describe: a top-level before() could run before useControlPlane's has started the plane.
describe('the CRDs through kubectl', () => {
  before(async () => {
    const { kubeConfig } = controlPlane();
    await installCrds(controlPlane().connection);
    await createNamespace(kubeConfig, NAMESPACE);
    resources = new CustomResources(kubeConfig, NAMESPACE);
  });

  test('the CRDs are Established with their names, short names and category', async () => {
    const api = controlPlane().kubeConfig.makeApiClient(ApiextensionsV1Api);
    for (const kind of kinds) {
      const crd = await api.readCustomResourceDefinition({ name: `${kind.plural}.${kind.group}` });
      assert.equal(crd.status?.conditions?.find((c) => c.type === 'Established')?.status, 'True');
      assert.deepEqual(crd.status?.acceptedNames?.shortNames, [...kind.shortNames]);
      assert.deepEqual(crd.status?.acceptedNames?.categories, ['gpucloud']);
    }
  });

  test('installing the CRDs again changes nothing', async () => {
    await installCrds(controlPlane().connection);
  });

  test('every example is accepted', async () => {
    const core = controlPlane().kubeConfig.makeApiClient(CoreV1Api);
    const objects = KubernetesObjectApi.makeApiClient(controlPlane().kubeConfig);
    for (const { file, manifest } of await readExamples()) {
      if (manifest.apiVersion === API_VERSION) {
        const created = await resources.create(manifest);
        assert.equal(created.metadata.name, manifest.metadata.name, file);
      } else if (manifest.kind === 'Deployment') {
        await objects.create({ ...manifest, metadata: { ...manifest.metadata, namespace: NAMESPACE } });
      } else {
        assert.equal(
          manifest.kind,
          'Secret',
          `${file}: examples only carry Secrets and Deployments that read them beside the custom resources`,
        );
        await core.createNamespacedSecret({ namespace: NAMESPACE, body: manifest });
      }
    }
  });

  const now = () => new Date().toISOString().replace(/\.\d+Z$/, 'Z');
  const ready = (generation = 1) => ({
    type: 'Ready',
    status: 'True',
    observedGeneration: generation,
    lastTransitionTime: now(),
    reason: 'Available',
    message: 'the cloud resource is running',
  });
  const synced = { ...ready(), type: 'Synced', reason: 'ReconcileSuccess', message: '' };

  test('the status the operator writes is accepted, and kubectl get shows it in the printer columns', async () => {
    await resources.replaceStatus('GpuPod', 'jupyter', {
      id: '73412',
      phase: 'RUNNING',
      conditions: [ready(), synced],
      observedGeneration: 1,
      lastSyncTime: now(),
      gpuType: 'NVIDIA GeForce RTX 4090',
      region: 'us-east-1',
      pausedBy: {
        reason: 'Idle',
        message: 'paused by the operator: every GPU stayed below 5% utilisation for 30 minutes',
        since: now(),
        generation: 1,
      },
      startTime: now(),
      deadlineTime: '2099-01-01T00:00:00Z',
      gpuDisplayName: 'RTX 4090 24GB',
      sshCommand: 'ssh root@203.0.113.7 -p 30022',
      internalIp: '10.0.3.17',
      exposedPorts: [
        { port: 8888, protocol: 'HTTP', ingressUrl: 'https://p73412-8888.proxy.example.com', healthy: true },
      ],
      prices: { singleCard: '0.69', containerVolume: '0.0001', persistentVolume: '0' },
      runningSeconds: 5400,
      estimatedCost: '1.0440',
      metrics: {
        sampledAt: now(),
        cpuUsage: 0.42,
        memoryUsedBytes: 12_884_901_888,
        memoryTotalBytes: 44_023_414_784,
        gpus: [
          {
            index: 0,
            utilizationPercent: 87.5,
            memoryUsedBytes: 20_401_094_656,
            memoryTotalBytes: 25_769_803_776,
          },
        ],
        storageUsedBytes: 8_589_934_592,
        storageTotalBytes: 53_687_091_200,
      },
    });
    const table = await kubectl(controlPlane(), 'get', 'gpupods', '-n', NAMESPACE);
    const [header, ...rows] = table.trim().split('\n');
    assert.match(
      header ?? '',
      /^NAME\s+PHASE\s+GPU TYPE\s+GPU COUNT\s+REGION\s+PRICE\s+PAUSED BY\s+DEADLINE\s+READY\s+AGE$/,
    );
    assert.match(
      rows.find((row) => row.startsWith('jupyter ')) ?? '',
      /RUNNING\s+NVIDIA GeForce RTX 4090\s+1\s+us-east-1\s+0\.69\s+Idle\s+2099-01-01T00:00:00Z\s+True/,
    );
  });

  test('kubectl wait --for=condition=Ready returns once the Ready condition is True', async () => {
    await resources.replaceStatus('GpuVm', 'dev-box', {
      id: '1201',
      phase: 'RUNNING',
      conditions: [ready()],
      name: 'alice-dev-box',
      region: 'us-east-1',
      pricePerHour: '0.6900',
      gpuType: 'NVIDIA GeForce RTX 4090',
      gpuDisplayName: 'RTX 4090 24GB',
      gpuCount: 1,
      cpuCores: 8,
      memoryInGb: '41',
      gpuMemoryInGb: '24',
      storageInGb: '100',
      osInfo: 'Ubuntu 22.04',
      isSpot: false,
      ipAddress: '203.0.113.20',
      domainName: 'vm-1201.example.com',
      sshTemplate: 'ssh ubuntu@{ip}',
      notebookUrl: 'https://vm-1201.example.com/lab',
    });
    const output = await kubectl(
      controlPlane(),
      'wait',
      '-n',
      NAMESPACE,
      '--for=condition=Ready',
      'gpuvm/dev-box',
      '--timeout=30s',
    );
    assert.match(output, /gpuvm\.gpucloud\.io\/dev-box condition met/);
    const wide = await kubectl(controlPlane(), 'get', 'gvm', 'dev-box', '-n', NAMESPACE, '-o', 'wide');
    assert.match(
      wide,
      /RUNNING\s+NVIDIA GeForce RTX 4090\s+1\s+us-east-1\s+0\.6900\s+203\.0\.113\.20\s+True/,
    );
  });

  test('kubectl scale sets spec.workers, and the scale subresource reads status.replicas', async () => {
    await kubectl(
      controlPlane(),
      'scale',
      '-n',
      NAMESPACE,
      'serverlessendpoint/sd-inference',
      '--replicas=4',
    );
    const scaled = await resources.get('ServerlessEndpoint', 'sd-inference');
    assert.equal(scaled.spec?.workers, 4);

    await resources.replaceStatus('ServerlessEndpoint', 'sd-inference', {
      id: '88',
      phase: 'RUNNING',
      conditions: [ready(2)],
      domain: 'sd-inference.serverless.example.com',
      totalWorkers: 4,
      runningWorkers: 3,
      replicas: 3,
      perHourPrice: '2.76',
      perSecondPrice: '0.000767',
      cost: '0.42',
      tasks: { processing: 2, delivered: 1, success: 40, failed: 1 },
    });
    const replicas = await kubectl(
      controlPlane(),
      ...['get', '-n', NAMESPACE, 'serverlessendpoint/sd-inference', '--subresource=scale'],
      ...['-o', 'jsonpath={.spec.replicas}/{.status.replicas}'],
    );
    assert.equal(replicas, '4/3');
    const table = await kubectl(controlPlane(), 'get', 'sle', 'sd-inference', '-n', NAMESPACE);
    assert.match(table, /RUNNING\s+NVIDIA GeForce RTX 4090\s+1\s+us-east-1\s+4\s+3\s+True/);
  });

  test('kubectl get gpucloud lists every kind', async () => {
    const names = await kubectl(controlPlane(), 'get', 'gpucloud', '-n', NAMESPACE, '-o', 'name');
    for (const expected of [
      'gpupod.gpucloud.io/jupyter',
      'gpuvm.gpucloud.io/dev-box',
      'serverlessendpoint.gpucloud.io/sd-inference',
    ]) {
      assert.ok(names.split('\n').includes(expected), `${expected} missing from:\n${names}`);
    }
  });

  test('kubectl explain teaches the fields from their descriptions', async () => {
    // kubectl wraps descriptions to the terminal width: compare with the whitespace folded.
    const explain = async (field: string) =>
      (await kubectl(controlPlane(), 'explain', field)).replace(/\s+/g, ' ');
    // The apiserver publishes a new CRD's OpenAPI a moment after it is Established.
    const spec = await eventually(() => explain('gpupod.spec'));
    assert.match(
      spec,
      /gpuCount <integer> -required- Number of GPUs: a power of 2\. Immutable: delete and recreate the GpuPod to change it\./,
    );
    assert.match(spec, /paused <boolean> Pause the pod/);
    assert.match(spec, /The operator sets the callback URL itself, so it is not a field here\./);
    const secretRef = await explain('gpupod.spec.environmentVars.valueFrom.secretKeyRef');
    assert.match(secretRef, /Selects one key of a Secret in the same namespace\./);
    assert.match(await explain('sle.spec.workers'), /kubectl scale serverlessendpoint/);
  });
});
