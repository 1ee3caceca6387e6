// The limit: the apiserver's own throughput for the writes convergence needs, from a tight loop with no
// operator logic, at the same client concurrency. Two loops: the reference (create the resource, then
// write its status: 2 writes) and one making the writes the crash-safe operator makes for each resource
// (create; create intent and finalizer; id and late-initialised fields; status: 4 writes). The
// namespace is watched as the benchmark watches the operator's, so both runs pay the same watch cost.
import { z } from 'zod';
import { objectPath } from '../../src/kube/resource-type.ts';
import { CREATE_INTENT, EXTERNAL_ID, FINALIZER } from '../../src/managed/core/annotations.ts';
import { deletePaged, paged } from '../cleanup.ts';
import { gpuPod, names, readyPodStatus } from '../manifests.ts';
import { forEachConcurrently } from '../parallel.ts';
import { cpuOf } from '../process-stats.ts';
import { createResource, ensureNamespace, type Session } from '../session.ts';
import { RESOURCES } from '../stack.ts';
import { round } from '../stats.ts';
import { ResourceWatch } from '../watch.ts';

/** Which writes each resource gets: the 2-write reference, or as many as the operator makes. */
export type RawWrites = 'reference' | 'equal';

export interface RawResult {
  writes: RawWrites;
  writesPerResource: number;
  count: number;
  concurrency: number;
  seconds: number;
  /** Resources created and status-patched per second. */
  resourcesPerSecond: number;
  controlPlaneCores: number;
}

export async function measureRaw(
  session: Session,
  namespace: string,
  count: number,
  writes: RawWrites,
): Promise<RawResult> {
  const { kube } = session.stack;
  await ensureNamespace(kube, namespace);
  const manifests = names('raw', count).map((name, index) => paged(gpuPod(name), index));
  const watch = new ResourceWatch(kube, RESOURCES.gpuPod, namespace, session.log);
  await watch.start();
  const cpuBefore = cpuOf(session.controlPlanePids);
  const began = Date.now();
  try {
    await forEachConcurrently(manifests, session.options.concurrency, async (manifest, index) => {
      const created = await createResource(kube, namespace, manifest);
      const path = objectPath(RESOURCES.gpuPod, { namespace, name: manifest.name });
      if (writes === 'equal') {
        const intent = { [CREATE_INTENT]: `${Date.now()}.seal`, 'gpucloud.io/create-name': manifest.name };
        await kube.request(z.unknown(), {
          method: 'PATCH',
          path,
          body: { metadata: { annotations: intent, finalizers: [FINALIZER], resourceVersion: created } },
        });
        await kube.request(z.unknown(), {
          method: 'PATCH',
          path,
          body: {
            metadata: {
              annotations: {
                [EXTERNAL_ID]: String(index + 1),
                [CREATE_INTENT]: null,
                'gpucloud.io/create-name': null,
              },
            },
            spec: { name: manifest.name, isSpot: false, paused: false },
          },
        });
      }
      await kube.request(z.unknown(), {
        method: 'PATCH',
        path: `${objectPath(RESOURCES.gpuPod, { namespace, name: manifest.name })}/status`,
        patchType: 'application/json-patch+json',
        body: [{ op: 'add', path: '/status', value: readyPodStatus(String(index + 1)) }],
      });
    });
  } finally {
    await watch.stop();
  }
  const ms = Date.now() - began;
  const controlPlaneCores = round((cpuOf(session.controlPlanePids) - cpuBefore) / (ms / 1000), 2);
  // Out of the way of what follows: the operator never watches this namespace, but the apiserver's
  // watch cache holds every object of the kind (and the equal loop's carry the operator's finalizer).
  await deletePaged(kube, RESOURCES.gpuPod, namespace, { count, concurrency: session.options.concurrency });
  return {
    writes,
    writesPerResource: writes === 'equal' ? 4 : 2,
    count,
    concurrency: session.options.concurrency,
    seconds: round(ms / 1000, 2),
    resourcesPerSecond: round((count * 1000) / ms),
    controlPlaneCores,
  };
}
