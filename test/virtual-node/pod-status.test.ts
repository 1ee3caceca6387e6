import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { keeping, ownerOf, type StoredGpuPod } from '../../src/virtual-node/pod-gpu-pod.ts';
import type { NodePodObject } from '../../src/virtual-node/pod-object.ts';
import {
  type GpuPodStatusView,
  mirroredChanged,
  podStatus,
  podStatusDiffers,
} from '../../src/virtual-node/pod-status.ts';

const NOW = new Date('2026-03-01T12:00:00.456Z');
const T1 = '2026-03-01T11:00:00.123Z';

function pod(status?: NodePodObject['status']): NodePodObject {
  return {
    metadata: { name: 'web-1', namespace: 'team-a', uid: 'uid-1' },
    spec: { restartPolicy: 'Always', containers: [{ name: 'main', image: 'app:1' }] },
    ...(status ? { status } : {}),
  };
}

const cond = (type: string, status: 'True' | 'False', reason: string, message = '') => ({
  type,
  status,
  reason,
  message,
  lastTransitionTime: T1,
});

const of = (
  gpuPod: GpuPodStatusView | undefined,
  waiting?: { reason: string; message: string },
  current = pod(),
) => podStatus({ pod: current, nodeAddress: '10.1.2.3', gpuPod, waiting, now: NOW });

const conditionsOf = (status: ReturnType<typeof of>) =>
  Object.fromEntries(status.conditions.map((c) => [c.type, c.status]));

describe('a Pod’s status from its GpuPod’s, as a kubelet writes it', () => {
  test('no GpuPod status yet: Pending, the container ContainerCreating, scheduled and initialized, host address and start time', () => {
    const status = of(undefined);
    assert.equal(status.phase, 'Pending');
    assert.deepEqual(status.containerStatuses[0]?.state, { waiting: { reason: 'ContainerCreating' } });
    assert.deepEqual(conditionsOf(status), {
      PodScheduled: 'True',
      Initialized: 'True',
      ContainersReady: 'False',
      Ready: 'False',
    });
    assert.equal(status.hostIP, '10.1.2.3');
    assert.equal(status.startTime, '2026-03-01T12:00:00Z', 'to the second, as a Pod stores times');
    assert.equal(status.podIP, undefined);
    assert.equal(status.containerStatuses[0]?.containerID, undefined);
  });

  test('refused by a guardrail or budget: waiting with the Synced reason, so kubectl get pods shows it', () => {
    const status = of({
      conditions: [
        cond('Ready', 'False', 'Creating'),
        cond('Synced', 'False', 'BudgetExceeded', 'budget team: $1.01/h more would make $4.01/h'),
      ],
    });
    assert.equal(status.phase, 'Pending');
    assert.deepEqual(status.containerStatuses[0]?.state, {
      waiting: { reason: 'BudgetExceeded', message: 'budget team: $1.01/h more would make $4.01/h' },
    });
  });

  test('the cloud starting the pod is ContainerCreating, as a kubelet says while it starts a container, with no status news', () => {
    // As the apiserver stores the first status written.
    const before = pod(JSON.parse(JSON.stringify(of(undefined))));
    const starting = of(
      {
        id: 'p-1',
        conditions: [
          cond('Ready', 'False', 'Initializing', 'the cloud is starting the pod'),
          cond('Synced', 'True', 'ReconcileSuccess'),
        ],
        internalIp: '172.16.0.9',
      },
      undefined,
      before,
    );
    assert.deepEqual(starting.containerStatuses[0]?.state, { waiting: { reason: 'ContainerCreating' } });
    assert.equal(starting.containerStatuses[0]?.containerID, undefined, 'no container id while it is made');
    assert.equal(starting.podIP, undefined, 'nor an address');
    assert.equal(podStatusDiffers(before, starting), false, 'nothing to write');
    const running = of(
      { id: 'p-1', internalIp: '172.16.0.9', conditions: [cond('Ready', 'True', 'Running')] },
      undefined,
      before,
    );
    assert.equal(running.containerStatuses[0]?.containerID, 'gpucloud://p-1');
    assert.equal(running.podIP, '172.16.0.9');
    assert.equal(podStatusDiffers(before, running), true);
  });

  test('no room: waiting with the Ready reason (NoCapacity)', () => {
    const status = of({
      conditions: [cond('Ready', 'False', 'NoCapacity', 'every fitting offer was tried')],
    });
    assert.equal(status.containerStatuses[0]?.state.waiting?.reason, 'NoCapacity');
  });

  test('the controller’s own wait wins: a ConfigMap missing, a name still held', () => {
    const status = of(undefined, {
      reason: 'CreateContainerConfigError',
      message: 'configmap "x" not found',
    });
    assert.deepEqual(status.containerStatuses[0]?.state, {
      waiting: { reason: 'CreateContainerConfigError', message: 'configmap "x" not found' },
    });
  });

  test('running: Running, ready, started, the cloud id as containerID, the cloud pod’s IP, running since Ready', () => {
    const status = of({ id: '42', internalIp: '172.16.0.9', conditions: [cond('Ready', 'True', 'Running')] });
    assert.equal(status.phase, 'Running');
    assert.deepEqual(conditionsOf(status), {
      PodScheduled: 'True',
      Initialized: 'True',
      ContainersReady: 'True',
      Ready: 'True',
    });
    const [container] = status.containerStatuses;
    assert.deepEqual(container, {
      name: 'main',
      image: 'app:1',
      imageID: '',
      containerID: 'gpucloud://42',
      ready: true,
      started: true,
      restartCount: 0,
      state: { running: { startedAt: '2026-03-01T11:00:00Z' } },
      lastState: {},
    });
    assert.equal(status.podIP, '172.16.0.9');
    assert.deepEqual(status.podIPs, [{ ip: '172.16.0.9' }]);
  });

  test('an address that is no IP is not written (the apiserver would refuse the status)', () => {
    assert.equal(
      of({ id: '42', internalIp: 'pending', conditions: [cond('Ready', 'True', 'Running')] }).podIP,
      undefined,
    );
  });

  test('once running, a pause keeps the phase Running, the container waiting, not ready', () => {
    const status = of(
      { id: '42', conditions: [cond('Ready', 'False', 'Paused', 'the pod is paused')] },
      undefined,
      pod({ phase: 'Running' }),
    );
    assert.equal(status.phase, 'Running');
    assert.equal(status.containerStatuses[0]?.state.waiting?.reason, 'Paused');
    assert.equal(status.containerStatuses[0]?.ready, false);
  });

  test('the cloud failed the pod, or the GpuPod failed for good: Failed, the container terminated with the reason', () => {
    const failed = of({
      id: '42',
      conditions: [cond('Ready', 'False', 'Failed', 'the cloud reports the pod FAILED')],
    });
    assert.equal(failed.phase, 'Failed');
    assert.equal(failed.reason, 'Failed');
    assert.deepEqual(failed.containerStatuses[0]?.state, {
      terminated: {
        exitCode: 1,
        reason: 'Failed',
        message: 'the cloud reports the pod FAILED',
        finishedAt: '2026-03-01T11:00:00Z',
      },
    });
    const lost = of({
      conditions: [
        cond('Ready', 'False', 'DeadlineExceeded'),
        cond('Failed', 'True', 'DeadlineExceeded', 'its activeDeadlineSeconds passed'),
      ],
    });
    assert.equal(lost.phase, 'Failed');
    assert.equal(lost.message, 'its activeDeadlineSeconds passed');
  });

  test('restartCount: the cloud pods replaced (preemptions, failed starts), never down', () => {
    const gpuPod: GpuPodStatusView = {
      id: '43',
      preemptions: 1,
      conditions: [cond('Ready', 'True', 'Running')],
      placement: {
        gpuType: 'L40S',
        region: 'us',
        spot: false,
        pricePerGpuHour: '1.0000',
        placedAt: T1,
        attempts: [
          {
            gpuType: 'L40S',
            region: 'eu',
            spot: false,
            pricePerGpuHour: '1.0000',
            outcome: 'NoCapacity',
            at: T1,
          },
          {
            gpuType: 'L40S',
            region: 'eu',
            spot: false,
            pricePerGpuHour: '1.0000',
            outcome: 'FailedToStart',
            at: T1,
          },
        ],
      },
    };
    assert.equal(of(gpuPod).containerStatuses[0]?.restartCount, 2);
    const before = pod({ containerStatuses: [{ name: 'main', restartCount: 5 }] });
    assert.equal(of(gpuPod, undefined, before).containerStatuses[0]?.restartCount, 5);
  });

  test('written only when it says something new: the same status read back is no news, transition times kept', () => {
    const first = of({ id: '42', internalIp: '172.16.0.9', conditions: [cond('Ready', 'True', 'Running')] });
    // As the apiserver stores it: JSON, with the fields a status write does not set (qosClass).
    const stored = pod({ ...JSON.parse(JSON.stringify(first)), qosClass: 'BestEffort' });
    const again = podStatus({
      pod: stored,
      nodeAddress: '10.1.2.3',
      gpuPod: { id: '42', internalIp: '172.16.0.9', conditions: [cond('Ready', 'True', 'Running')] },
      now: new Date('2026-03-01T13:00:00Z'),
    });
    assert.equal(podStatusDiffers(stored, again), false);
    const notReady = podStatus({
      pod: stored,
      nodeAddress: '10.1.2.3',
      gpuPod: { id: '42', conditions: [cond('Ready', 'False', 'Degraded')] },
      now: new Date('2026-03-01T13:00:00Z'),
    });
    assert.equal(podStatusDiffers(stored, notReady), true);
    assert.equal(
      notReady.conditions.find((c) => c.type === 'PodScheduled')?.lastTransitionTime,
      '2026-03-01T12:00:00Z',
    );
    assert.equal(
      notReady.conditions.find((c) => c.type === 'Ready')?.lastTransitionTime,
      '2026-03-01T13:00:00Z',
    );
    assert.deepEqual(notReady.containerStatuses[0]?.state, {
      running: { startedAt: '2026-03-01T11:00:00Z' },
    });
  });
});

describe('which GpuPod status changes are news to its Pod', () => {
  const running: Record<string, unknown> = {
    id: '42',
    internalIp: '10.9.0.7',
    phase: 'RUNNING',
    conditions: [cond('Ready', 'True', 'Available'), cond('Synced', 'True', 'ReconcileSuccess')],
    placement: { attempts: [{ gpuType: 'A100', outcome: 'FailedToStart', at: T1 }] },
    costPerHour: '1.20',
    observedGeneration: 1,
  };
  const shown = (status: Record<string, unknown>) => of(status as GpuPodStatusView);

  test('what the Pod does not show (cost, phase words, generations, sync times) is no news', () => {
    const bookkeeping = {
      ...running,
      costPerHour: '1.30',
      observedGeneration: 2,
      lastSyncTime: T1,
      placement: { attempts: [{ gpuType: 'A100', outcome: 'FailedToStart', at: NOW.toISOString() }] },
    };
    assert.equal(mirroredChanged(running, bookkeeping), false);
    assert.deepEqual(shown(bookkeeping), shown(running), 'the Pod’s status is the same indeed');
  });

  test('each part the Pod shows is news, and changes the Pod’s status', () => {
    const changes: Record<string, Record<string, unknown>> = {
      id: { ...running, id: '43' },
      internalIp: { ...running, internalIp: '10.9.0.8' },
      preemptions: { ...running, preemptions: 1 },
      'a condition': { ...running, conditions: [cond('Ready', 'False', 'Failed', 'out of memory')] },
      'an attempt': {
        ...running,
        placement: {
          attempts: [...(running.placement as { attempts: unknown[] }).attempts, { outcome: 'AboveCap' }],
        },
      },
    };
    for (const [what, changed] of Object.entries(changes)) {
      assert.equal(mirroredChanged(running, changed), true, what);
      assert.notDeepEqual(shown(changed), shown(running), `${what}: the Pod shows it`);
    }
  });

  test('a status first seen, or unreadable, is news', () => {
    assert.equal(mirroredChanged(undefined, running), true);
    assert.equal(mirroredChanged(undefined, undefined), false);
    assert.equal(mirroredChanged({ conditions: 'garbage' }, running), true);
  });
});

describe('the GpuPod of a Pod', () => {
  const gpuPod = (
    owner: Record<string, unknown> | undefined,
    spec: Record<string, unknown> = {},
  ): StoredGpuPod => ({
    metadata: {
      name: 'web-1',
      ...(owner
        ? { ownerReferences: [{ apiVersion: 'v1', kind: 'Pod', uid: 'uid-1', controller: true, ...owner }] }
        : {}),
    },
    spec,
  });

  test('told apart: this Pod’s, an earlier Pod’s of the same name, or no Pod’s', () => {
    assert.equal(ownerOf(gpuPod({}), pod()), 'this-pod');
    assert.equal(ownerOf(gpuPod({ uid: 'uid-0' }), pod()), 'another-pod');
    assert.equal(ownerOf(gpuPod(undefined), pod()), 'not-a-pod');
    assert.equal(ownerOf(gpuPod({ kind: 'ReplicaSet' }), pod()), 'not-a-pod');
  });

  const wanted = {
    name: 'web-1',
    image: 'app:1',
    gpuCount: 1,
    placement: { gpuTypes: ['L40S'] },
    paused: false,
    deletionPolicy: 'Delete' as const,
    providerConfigRef: { name: 'team-a' },
  };

  test('kept: what a user changed of its mutable fields put back, what they added removed', () => {
    assert.deepEqual(keeping(gpuPod({}, { ...wanted }), wanted), { kind: 'as-is' });
    assert.deepEqual(
      keeping(
        gpuPod({}, { ...wanted, paused: true, deletionPolicy: 'Orphan', managementPolicies: ['Observe'] }),
        wanted,
      ),
      { kind: 'patch', spec: { paused: false, managementPolicies: null, deletionPolicy: 'Delete' } },
    );
  });

  test('the Pod’s image changed: the cloud pod is made again', () => {
    assert.deepEqual(keeping(gpuPod({}, { ...wanted, image: 'app:0' }), wanted), {
      kind: 'replace',
      field: 'image',
    });
  });
});
