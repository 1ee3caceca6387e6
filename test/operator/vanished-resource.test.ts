import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { z } from 'zod';
import { collectionPath } from '../../src/kube/resource-type.ts';
import { EXTERNAL_ID, FINALIZER, SKIP_RECONCILE } from '../../src/managed/core/annotations.ts';
import {
  type AdmissionRequest,
  type AdmissionWebhook,
  startAdmissionWebhook,
} from '../support/admission-webhook.ts';
import { cloudObjects, manifests, resources, useOperator, useStack } from '../support/operator.ts';
import { poll } from '../support/until.ts';

// kubernetes/kubernetes#77988, through the real apiserver and the in-process operator: a plain DELETE
// reads the resource, sees no finalizer, and commits after a conflict retry that re-checks only the
// caller's preconditions. The operator's create-intent write, which adds the finalizer in between, is
// ignored: the resource is gone while its cloud create goes out. A validating webhook holds the DELETE
// between that read and the commit, so the interleaving is forced, not hoped for:
//   1. the endpoint is created with skip-reconcile, so the operator leaves it alone;
//   2. the DELETE is sent, and the webhook holds it (the registry has read the object, no finalizer);
//   3. skip-reconcile is removed: the operator writes its intent with the finalizer, and creates;
//   4. the DELETE is let go (a) when the write that records the id arrives, before it is committed, or
//      (b) once the id is recorded; it retries on the conflict, is let through, and removes the object.
// Either way no cloud endpoint may outlive the resource. In (a) the operator learns it from the record
// answering 404 (Creation's abandon), in (b) from the watch's DELETED state that still holds the finalizer
// (ManagedReconciler.vanished). Both leak on 239e8fd; (b) still leaks on f400610, before the latter.
const NS = 'vanished';
const HOLD_LABEL = 'test.gpucloud.io/hold-delete';
const LEAK_BOUND_MS = 20_000;

const stack = useStack();
const cloudEndpoints = (name: string) => cloudObjects(stack.sim()).endpoints(name);

interface Hold {
  /** Release the held DELETE when the write recording the id arrives, and let that write go after it. */
  releaseOnRecord: boolean;
  /** The finalizers of the object each DELETE call of the webhook saw, in order. */
  deleteCalls: Array<readonly string[]>;
  /** The id the operator tried to record, seen in the webhook. */
  recordedId?: string;
  reached: PromiseWithResolvers<void>;
  released: PromiseWithResolvers<void>;
  /** Settles once the DELETE sent by the test is answered. */
  deleted?: Promise<unknown>;
}

const holds = new Map<string, Hold>();

/** Holds the first DELETE of each held resource until released; everything else passes at once. */
async function admit(request: AdmissionRequest): Promise<void> {
  const hold = request.name === undefined ? undefined : holds.get(request.name);
  if (!hold || request.dryRun) return;
  if (request.operation === 'DELETE') {
    hold.deleteCalls.push(request.oldObject?.metadata.finalizers ?? []);
    if (hold.deleteCalls.length === 1) {
      hold.reached.resolve();
      await hold.released.promise;
    }
    return;
  }
  const id = request.object?.metadata.annotations?.[EXTERNAL_ID];
  const recording = id !== undefined && request.oldObject?.metadata.annotations?.[EXTERNAL_ID] === undefined;
  if (request.operation === 'UPDATE' && recording) {
    hold.recordedId = id;
    if (hold.releaseOnRecord) {
      hold.released.resolve();
      await hold.deleted;
    }
  }
}

describe('a resource the apiserver deletes while it holds the finalizer (kubernetes/kubernetes#77988)', () => {
  let webhook: AdmissionWebhook | undefined;
  before(async () => {
    await stack.cluster().ensureNamespace(NS);
    webhook = await startAdmissionWebhook(stack.plane(), {
      name: 'vanished-resource-hold-delete',
      namespace: NS,
      matchLabels: { [HOLD_LABEL]: 'true' },
      rules: [
        {
          apiGroups: ['gpucloud.io'],
          apiVersions: ['*'],
          operations: ['CREATE', 'UPDATE', 'DELETE'],
          resources: ['serverlessendpoints'],
        },
      ],
      admit,
    });
    await webhook.effective(() =>
      stack.cluster().client.request(z.unknown(), {
        method: 'POST',
        path: collectionPath(resources.serverlessEndpoint, NS),
        query: { dryRun: 'All' },
        body: manifests.serverlessEndpoint('probe', {}, { labels: { [HOLD_LABEL]: 'true' } }),
      }),
    );
  });
  after(async () => {
    await webhook?.stop();
  });
  const operator = useOperator(stack, [NS]);

  /** Steps 1 to 4 above for a new endpoint `name`; answers the hold once the DELETE is answered. */
  async function deleteDuringCreate(name: string, releaseOnRecord: boolean): Promise<Hold> {
    const cluster = stack.cluster();
    const hold: Hold = {
      releaseOnRecord,
      deleteCalls: [],
      reached: Promise.withResolvers(),
      released: Promise.withResolvers(),
    };
    holds.set(name, hold);
    await cluster.create(
      resources.serverlessEndpoint,
      NS,
      manifests.serverlessEndpoint(
        name,
        {},
        { labels: { [HOLD_LABEL]: 'true' }, annotations: { [SKIP_RECONCILE]: 'true' } },
      ),
    );
    const deleting = cluster.delete(resources.serverlessEndpoint, NS, name);
    hold.deleted = deleting.catch(() => undefined);
    await hold.reached.promise;
    await cluster.patch(resources.serverlessEndpoint, NS, name, {
      metadata: { annotations: { [SKIP_RECONCILE]: null } },
    });
    if (!releaseOnRecord) {
      await cluster.waitFor(
        resources.serverlessEndpoint,
        NS,
        name,
        (obj) => obj?.status?.id !== undefined,
        'status.id recorded while the DELETE is held',
        15_000,
      );
      hold.released.resolve();
    }
    await deleting;
    return hold;
  }

  /** The operator's log lines about `name`, one short line each. */
  function logOf(name: string): string[] {
    return operator()
      .logs.filter((line) => line.includes(name))
      .map((line) => {
        const { time, msg, err } = JSON.parse(line) as {
          time: string;
          msg: string;
          err?: { message?: string };
        };
        return `  ${time.slice(11, 23)} ${msg}${err?.message ? ` (${err.message})` : ''}`.slice(0, 300);
      });
  }

  async function assertNoLeak(name: string, hold: Hold): Promise<void> {
    assert.equal(
      await stack.cluster().get(resources.serverlessEndpoint, NS, name),
      undefined,
      'the DELETE removed the resource',
    );
    assert.deepEqual(hold.deleteCalls[0], [], 'the DELETE read the object before the finalizer was added');
    assert.deepEqual(
      hold.deleteCalls.at(-1),
      [FINALIZER],
      'the DELETE committed on an object holding the finalizer (the race happened)',
    );
    assert.ok(hold.recordedId, 'a cloud endpoint was created for the resource');
    await poll(
      async () => cloudEndpoints(name).map(({ id, status }) => ({ id, status })),
      (live) => live.length === 0,
      `no cloud endpoint named ${name} (created as ${hold.recordedId}) to outlive the resource`,
      LEAK_BOUND_MS,
    ).catch((error: unknown) => {
      const message = error instanceof Error ? error.message : String(error);
      throw new Error(`${message}\noperator log of ${name}:\n${logOf(name).join('\n')}`, { cause: error });
    });
  }

  test('(a) the DELETE commits after the create, before its id is recorded: the endpoint is deleted', async () => {
    const hold = await deleteDuringCreate('before-record', true);
    await assertNoLeak('before-record', hold);
  });

  test('(b) the DELETE commits after the id is recorded: the endpoint is deleted', async () => {
    const hold = await deleteDuringCreate('after-record', false);
    await assertNoLeak('after-record', hold);
  });
});
