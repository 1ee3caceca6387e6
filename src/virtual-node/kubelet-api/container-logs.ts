// `GET /containerLogs/{namespace}/{pod}/{container}`: the cloud pod's log, named by the Pod's
// `gpucloud.io/external-id` and read through the account of the Pod's node, written as the kubelet writes
// a container's. A Pod with no cloud pod yet answers as the kubelet does for a container not started.
import { once } from 'node:events';
import type { ServerResponse } from 'node:http';
import { z } from 'zod';
import { readLogs } from '../../api/pod-logs.ts';
import type { DeepReadonly, KubeObject } from '../../kube/object.ts';
import { EXTERNAL_ID } from '../../managed/core/annotations.ts';
import { ServingError } from '../../serving/status.ts';
import type { AccountEntries } from '../node-controller.ts';
import { readContainerLogOptions } from './log-options.ts';
import { ContainerLogWriter } from './log-writer.ts';

export interface ContainerLogsRequest {
  readonly pod: DeepReadonly<KubeObject>;
  /** The ProviderConfig of the Pod's node: its account reads the log. */
  readonly config: string;
  readonly container: string;
  readonly query: URLSearchParams;
  readonly accounts: AccountEntries;
  readonly followPollMs: number;
  /** Aborts when the client goes away. */
  readonly signal: AbortSignal;
  readonly response: ServerResponse;
}

export async function containerLogs(request: ContainerLogsRequest): Promise<void> {
  const { pod, container, response } = request;
  const name = pod.metadata.name;
  const options = readContainerLogOptions(request.query, Date.now());
  if (!containerNames(pod).includes(container))
    throw new ServingError(400, `container "${container}" in pod "${name}" is not available`);
  if (options.previous)
    throw new ServingError(400, `previous terminated container "${container}" in pod "${name}" not found`);
  const id = pod.metadata.annotations?.[EXTERNAL_ID];
  if (!id)
    throw new ServingError(
      400,
      `container "${container}" in pod "${name}" is waiting to start: ContainerCreating`,
    );
  const entry = request.accounts.get(request.config);
  if (!entry || entry.problem) {
    throw new ServingError(
      503,
      `the account of ProviderConfig ${request.config} is not ready: kubectl get providerconfig ${request.config} says why`,
    );
  }
  // Reading stops when the client goes, or once `limitBytes` are written.
  const stop = new AbortController();
  const signal = AbortSignal.any([request.signal, stop.signal]);
  let started = false;
  const start = () => {
    if (started) return;
    started = true;
    response.writeHead(200, { 'content-type': 'text/plain', 'cache-control': 'no-store' });
    response.flushHeaders();
  };
  const writer = new ContainerLogWriter(options, async (chunk) => {
    start();
    if (signal.aborted || response.write(chunk)) return;
    await once(response, 'drain', { signal }).catch(() => undefined);
  });
  // Headers at once when following: kubectl shows the stream open before the first line.
  if (options.follow) start();
  await readLogs(
    (page) => entry.account.client.pods.logs(id, page),
    {
      follow: options.follow,
      sinceMs: options.sinceMs,
      pollMs: request.followPollMs,
      signal,
      onCaughtUp: () => writer.caughtUp(),
    },
    async (_text, line) => {
      await writer.line(line);
      if (writer.full) stop.abort();
    },
  );
  await writer.caughtUp();
  start();
  response.end();
}

const podContainers = z.looseObject({
  spec: z.looseObject({ containers: z.array(z.looseObject({ name: z.string() })) }),
});

function containerNames(pod: DeepReadonly<KubeObject>): string[] {
  const parsed = podContainers.safeParse(pod);
  return parsed.success ? parsed.data.spec.containers.map((c) => c.name) : [];
}
