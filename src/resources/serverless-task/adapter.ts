import type { GpuCloudClient } from '../../api/client.ts';
import { ApiCode } from '../../api/codes.ts';
import { CloudApiError } from '../../api/errors.ts';
import type { TaskStatus, TaskSummary } from '../../api/schemas/serverless.ts';
import { accountOf } from '../../managed/core/account-ref.ts';
import { ReconcileError } from '../../managed/core/errors.ts';
import type {
  ActContext,
  Blocker,
  ExternalKind,
  ManagedObject,
  Readiness,
} from '../../managed/core/external-kind.ts';
import { fingerprintOf, readinessFrom, unlessNotFound } from '../common/cloud.ts';
import { resourceOf } from '../common/kind.ts';
import type { AdapterContext } from '../common/registration.ts';
import { serverlessEndpointKind } from '../serverless-endpoint/schema.ts';
import type { ServerlessTaskStatus } from './schema.ts';
import { OUTPUT_CAP_BYTES, type ServerlessTaskSpec } from './schema.ts';

type ServerlessTask = ManagedObject<ServerlessTaskSpec>;

/** A task as listed, or as read (with its output). */
type TaskView = TaskSummary & { output?: unknown };

/** The statuses a task is in before it finishes: the only ones listed. */
const IN_FLIGHT: readonly TaskStatus[] = ['PROCESSING', 'DELIVERED'];

const readiness: Readonly<Record<string, Readiness>> = {
  PROCESSING: { ready: false, reason: 'Processing', message: 'the task waits in the queue' },
  DELIVERED: { ready: false, reason: 'Delivered', message: 'a worker is running the task' },
  SUCCESS: { ready: true, reason: 'Succeeded', message: 'the task succeeded' },
};

const endpoints = resourceOf(serverlessEndpointKind);

/**
 * Tasks, on the generic contract: the id is the client's (the resource's uid), so a submit is found by
 * one get and never made twice; tasks finish and are never deleted in the cloud. Tasks are listed per
 * endpoint, and only those in flight: a list per endpoint with tasks in flight per poll, and exactly one
 * get for each task once it leaves those lists, which reads its output.
 */
export function serverlessTaskAdapter(
  client: GpuCloudClient,
  { peers, clock }: AdapterContext,
): ExternalKind<ServerlessTaskSpec, TaskView, ServerlessTaskStatus> {
  /** Endpoints with tasks in flight, and since when each is known to have them. */
  const inFlight = new Map<string, number>();
  const track = (task: TaskView | undefined) => {
    if (task && IN_FLIGHT.includes(task.status as TaskStatus)) inFlight.set(task.endpointId, clock.now());
  };

  /** The endpoint the task names, from the informer cache. */
  const endpointOf = (mr: ServerlessTask) =>
    peers.get(endpoints, { namespace: mr.metadata.namespace, name: mr.spec.endpointRef.name });

  const endpointIdOf = (mr: ServerlessTask): string => {
    const id = endpointOf(mr)?.status?.id;
    if (id !== undefined) return id;
    throw new ReconcileError(
      'EndpointNotFound',
      `ServerlessEndpoint ${mr.spec.endpointRef.name} has no cloud id: the task cannot be looked up`,
      { terminal: false },
    );
  };

  const get = async (id: string): Promise<TaskView | undefined> => {
    const { endpointId, taskId } = splitId(id);
    // Not a task id at all (a hand-written external-id annotation): no task can have it.
    if (endpointId === '' || taskId === '') return undefined;
    const task = await unlessNotFound(client.serverless.tasks.get(endpointId, taskId));
    track(task);
    return task;
  };

  return {
    kind: 'ServerlessTask',
    list: async () => {
      const startedAt = clock.now();
      const listed: TaskView[] = [];
      for (const [endpointId, since] of [...inFlight]) {
        const before = listed.length;
        for (const status of IN_FLIGHT) {
          // A deleted endpoint's tasks drop out of the list; each is then read once and found gone.
          const pages = await unlessNotFound(
            Array.fromAsync(client.serverless.tasks.listAll(endpointId, { status })),
          );
          listed.push(...(pages ?? []));
        }
        if (listed.length === before && since < startedAt) inFlight.delete(endpointId);
      }
      return listed;
    },
    get,
    idOf: (task) => `${task.endpointId}/${task.taskId}`,
    createdAtOf: (task) => task.createdAt,
    fingerprint: (task) => fingerprintOf([task.status, task.deliveryStatus, task.deliveryAttempts]),
    isGone: () => false,
    identity: {
      ownId: (mr) => `${endpointIdOf(mr)}/${taskIdOf(mr)}`,
      isOwnCreate: async (mr, task) => task.taskId === taskIdOf(mr),
      blocker: (mr) => blocker(mr, endpointOf(mr)),
    },
    create: async (mr, ctx) => {
      const endpointId = endpointIdOf(mr);
      const taskId = taskIdOf(mr);
      const { input, workerPort, processUri, webhook } = mr.spec;
      const webhookAuthKey = await authKey(mr, ctx);
      try {
        await client.serverless.tasks.submit(endpointId, {
          taskId,
          input,
          ...(workerPort !== undefined && { workerPort }),
          ...(processUri !== undefined && { processUri }),
          ...(webhook !== undefined && { webhook }),
          ...(webhookAuthKey !== undefined && { webhookAuthKey }),
        });
      } catch (error) {
        // Refused as a request: the cloud refuses a taskId it has, so that may be this task's first submit.
        if (!(error instanceof CloudApiError && error.code === ApiCode.InvalidRequest)) throw error;
        const existing = await get(`${endpointId}/${taskId}`);
        if (!existing) throw error;
        return existing;
      }
      // The submit answers only the id: the task as it must stand now, until the next list shows it.
      const now = clock.now();
      const submitted: TaskView = {
        taskId,
        endpointId,
        endpointName: String(endpointOf(mr)?.status?.name ?? ''),
        status: 'PROCESSING',
        workerUrl: null,
        webhook: webhook ?? null,
        deliveryStatus: 'INIT',
        deliveryAttempts: 0,
        error: null,
        createdAt: now,
        updatedAt: now,
        deliveredAt: null,
      };
      track(submitted);
      return submitted;
    },
    plan: async () => ({ kind: 'in-sync' }),
    finite: {
      outcomeOf: (phase) => (phase === 'SUCCESS' ? 'Complete' : phase === 'FAILED' ? 'Failed' : undefined),
    },
    phaseOf: (task) => task.status,
    // A task's spec is its input, which the cloud cannot change: nothing to compare, nothing drifts.
    observe: (_mr, task) => ({
      phase: task.status,
      readiness: taskReadiness(task),
      status: taskStatus(task),
      drift: [],
    }),
  };
}

/** The cloud task id: the resource's uid, whose hyphens `^[A-Za-z0-9_]*$` does not allow. */
export function taskIdOf(mr: { metadata: { uid: string } }): string {
  return mr.metadata.uid.replaceAll('-', '');
}

/** Whether the endpoint can take the task now; a task for an endpoint that never can is refused. */
function blocker(mr: ServerlessTask, endpoint: ManagedObject<unknown> | undefined): Blocker | undefined {
  const name = mr.spec.endpointRef.name;
  const refuse = (reason: string, message: string): never => {
    throw new ReconcileError(reason, `${message}; delete this ServerlessTask and create one that fits`, {
      terminal: true,
    });
  };
  if (!endpoint) {
    return {
      reason: 'EndpointNotFound',
      message: `ServerlessEndpoint ${name} does not exist in namespace ${mr.metadata.namespace}; the task waits for it`,
    };
  }
  const account = accountOf(endpoint.spec);
  if (account !== accountOf(mr.spec)) {
    refuse(
      'EndpointInOtherAccount',
      `ServerlessEndpoint ${name} uses provider config ${account}, and a task runs in its endpoint's account`,
    );
  }
  const mode = serviceModeOf(endpoint.spec);
  if (mode !== undefined && mode !== 'QUEUE') {
    refuse(
      'EndpointNotQueue',
      `ServerlessEndpoint ${name} serves in ${mode} mode; tasks go only to QUEUE endpoints`,
    );
  }
  const phase = endpoint.status?.phase;
  if (endpoint.metadata.deletionTimestamp || endpoint.status?.id === undefined || mode === undefined) {
    return {
      reason: 'EndpointNotReady',
      message: `ServerlessEndpoint ${name} is not ready for tasks yet; the task waits for it`,
    };
  }
  if (phase !== 'RUNNING') {
    return {
      reason: 'EndpointNotRunning',
      message: `ServerlessEndpoint ${name} is ${phase ?? 'not running'}; the task is submitted once it runs`,
    };
  }
  return undefined;
}

function serviceModeOf(spec: unknown): string | undefined {
  if (typeof spec !== 'object' || spec === null || !('serviceMode' in spec)) return undefined;
  return typeof spec.serviceMode === 'string' ? spec.serviceMode : undefined;
}

/** The webhook's key from its Secret: resolved as Secret-sourced env is, so it never reaches a log. */
async function authKey(mr: ServerlessTask, ctx: ActContext): Promise<string | undefined> {
  const ref = mr.spec.webhookAuthKeySecretRef;
  if (!ref) return undefined;
  const [resolved] = await ctx.resolveEnv([
    { key: 'webhookAuthKeySecretRef', valueFrom: { secretKeyRef: ref } },
  ]);
  return resolved?.value;
}

/** The output, when it fits in status; its size either way. */
function outputFields(output: unknown): Record<string, unknown> {
  if (output === undefined || output === null) return {};
  const outputBytes = Buffer.byteLength(JSON.stringify(output));
  return outputBytes <= OUTPUT_CAP_BYTES ? { output, outputBytes } : { outputTruncated: true, outputBytes };
}

function isoTime(epochMs: number): string {
  return new Date(epochMs).toISOString();
}

/** The endpoint and task a ServerlessTask's cloud id (`endpointId/taskId`) names. */
export function splitId(id: string): { endpointId: string; taskId: string } {
  const [endpointId = '', taskId = ''] = id.split('/');
  return { endpointId, taskId };
}

/** The Ready condition a task's state reads as. */
function taskReadiness(task: TaskView): Readiness {
  return task.status === 'FAILED'
    ? {
        ready: false,
        reason: 'TaskFailed',
        message: `the task failed: ${task.error ?? 'the cloud gives no reason'}`,
        broken: true,
      }
    : readinessFrom(task.status, readiness);
}

/** The task's own status fields. */
function taskStatus(task: TaskView): Partial<ServerlessTaskStatus> {
  return {
    taskId: task.taskId,
    endpointId: task.endpointId,
    endpointName: task.endpointName,
    deliveryStatus: task.deliveryStatus,
    deliveryAttempts: task.deliveryAttempts,
    error: task.error ?? undefined,
    ...outputFields(task.output),
    createdAt: isoTime(task.createdAt),
    updatedAt: isoTime(task.updatedAt),
    deliveredAt: task.deliveredAt === null ? undefined : isoTime(task.deliveredAt),
  };
}
