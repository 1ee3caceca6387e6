import { type ClientOptions, createInvoker, type Invoke } from './call.ts';
import { operations } from './operations.ts';
import { MAX_PAGE_SIZE } from './schemas/common.ts';
import type { GpuSearchRequest, GpuSpec } from './schemas/gpus.ts';
import type { LegacyPodCreateRequest } from './schemas/legacy-pods.ts';
import type { LegacyVm, LegacyVmCreateRequest, LegacyVmListRequest } from './schemas/legacy-vms.ts';
import type { MetricsQuery } from './schemas/metrics.ts';
import type { PodCreateRequest, PodListQuery, PodLogLine, PodLogsQuery } from './schemas/pods.ts';
import type {
  EndpointCreateRequest,
  EndpointListQuery,
  EndpointUpdateRequest,
  TaskListQuery,
  TaskSubmitRequest,
  TaskSummary,
} from './schemas/serverless.ts';
import type { Vm, VmCreateRequest, VmListQuery, VmUpdateRequest } from './schemas/vms.ts';

/*
 * The typed facade over the 43 operations: one method per operation with a natural signature, plus
 * iterators that walk every page of a paged list. Validation, encoding, retries and errors are the
 * invoker's (call.ts); this file only maps arguments to an operation's params, query and body.
 */

const noInput = { params: {}, query: {}, body: undefined } as const;

function withId(id: string) {
  return { params: { id }, query: {}, body: undefined } as const;
}

function withPodId(pod_id: string) {
  return { params: { pod_id }, query: {}, body: undefined } as const;
}

/** What a paged list answers, reduced to what walking it needs. */
interface Page<T> {
  readonly items: readonly T[];
  readonly pages: number;
}

/**
 * Yields every item of a paged list, one page request at a time. It stops at the last page the
 * service reports, or at the first empty page, so a miscounting service cannot make it loop forever.
 */
async function* everyPage<T>(
  fetchPage: (page: number) => Promise<Page<T>>,
): AsyncGenerator<T, void, undefined> {
  for (let page = 1; ; page++) {
    const { items, pages } = await fetchPage(page);
    yield* items;
    if (items.length === 0 || page >= pages) return;
  }
}

/** Paging options of the `listAll` iterators: the page size (default and maximum 100). */
export interface PageOptions {
  readonly pageSize?: number;
}

function vmsClient(invoke: Invoke) {
  const list = (query: VmListQuery = {}) => invoke(operations.vms.list, { ...noInput, query });
  return {
    types: () => invoke(operations.vms.types, noInput),
    create: (request: VmCreateRequest) => invoke(operations.vms.create, { ...noInput, body: request }),
    get: (id: string) => invoke(operations.vms.get, withId(id)),
    list,
    /** Every VM of the organisation (optionally filtered by status), across all pages. */
    listAll: (
      filter: { status?: string } = {},
      { pageSize = MAX_PAGE_SIZE }: PageOptions = {},
    ): AsyncIterable<Vm> => everyPage((page) => list({ ...filter, page, size: pageSize })),
    update: (id: string, request: VmUpdateRequest) =>
      invoke(operations.vms.update, { ...withId(id), body: request }),
    terminate: (id: string) => invoke(operations.vms.terminate, withId(id)),
  };
}

function podsClient(invoke: Invoke) {
  const searchGpus = (request: GpuSearchRequest = {}) =>
    invoke(operations.pods.searchGpus, { ...noInput, body: request });
  const logs = (id: string, query: PodLogsQuery = {}) =>
    invoke(operations.pods.logs, { ...withId(id), query });
  return {
    create: (request: PodCreateRequest) => invoke(operations.pods.create, { ...noInput, body: request }),
    get: (id: string) => invoke(operations.pods.get, withId(id)),
    list: (query: PodListQuery = {}) => invoke(operations.pods.list, { ...noInput, query }),
    delete: async (id: string): Promise<void> => {
      await invoke(operations.pods.delete, withId(id));
    },
    pause: async (id: string): Promise<void> => {
      await invoke(operations.pods.pause, withId(id));
    },
    resume: async (id: string): Promise<void> => {
      await invoke(operations.pods.resume, withId(id));
    },
    searchGpus,
    /** Every GPU machine spec matching the search, across all pages. */
    searchGpusAll: (
      request: Omit<GpuSearchRequest, 'page' | 'size'> = {},
      { pageSize = MAX_PAGE_SIZE }: PageOptions = {},
    ): AsyncIterable<GpuSpec> => everyPage((page) => searchGpus({ ...request, page, size: pageSize })),
    logs,
    /** Every log line from the query's start, following `nextCursor` until the service says the end. */
    logsAll: async function* (
      id: string,
      query: Omit<PodLogsQuery, 'cursor'> = {},
    ): AsyncGenerator<PodLogLine> {
      let cursor: string | undefined;
      do {
        const result = await logs(id, cursor === undefined ? query : { ...query, cursor });
        yield* result.items;
        // An empty page that still names a cursor would loop on the same position: stop there.
        cursor = result.items.length === 0 ? undefined : (result.nextCursor ?? undefined);
      } while (cursor !== undefined);
    },
    runtime: (id: string) => invoke(operations.pods.runtime, withId(id)),
  };
}

function tasksClient(invoke: Invoke) {
  const { tasks } = operations.serverless;
  const list = (endpointId: string, query: TaskListQuery = {}) =>
    invoke(tasks.list, { ...withId(endpointId), query });
  return {
    submit: (endpointId: string, request: TaskSubmitRequest) =>
      invoke(tasks.submit, { ...withId(endpointId), body: request }),
    list,
    /** Every task of the endpoint (optionally with one status), across all pages. */
    listAll: (
      endpointId: string,
      filter: Pick<TaskListQuery, 'status'> = {},
      { pageSize = MAX_PAGE_SIZE }: PageOptions = {},
    ): AsyncIterable<TaskSummary> =>
      everyPage((page) => list(endpointId, { ...filter, page, size: pageSize })),
    get: (endpointId: string, taskId: string) =>
      invoke(tasks.get, { ...noInput, params: { id: endpointId, taskId } }),
    count: (endpointId: string) => invoke(tasks.count, withId(endpointId)),
  };
}

function serverlessClient(invoke: Invoke) {
  const { serverless } = operations;
  return {
    create: (request: EndpointCreateRequest) => invoke(serverless.create, { ...noInput, body: request }),
    list: (query: EndpointListQuery = {}) => invoke(serverless.list, { ...noInput, query }),
    get: (id: string) => invoke(serverless.get, withId(id)),
    update: (id: string, request: EndpointUpdateRequest) =>
      invoke(serverless.update, { ...withId(id), body: request }),
    delete: async (id: string): Promise<void> => {
      await invoke(serverless.delete, withId(id));
    },
    start: async (id: string): Promise<void> => {
      await invoke(serverless.start, withId(id));
    },
    stop: async (id: string): Promise<void> => {
      await invoke(serverless.stop, withId(id));
    },
    scaleWorkers: async (id: string, count: number): Promise<void> => {
      await invoke(serverless.scaleWorkers, { ...withId(id), query: { count } });
    },
    tasks: tasksClient(invoke),
  };
}

function metricsClient(invoke: Invoke) {
  const { metrics } = operations;
  return {
    cpu: (podId: string, query: MetricsQuery = {}) => invoke(metrics.cpu, { ...withPodId(podId), query }),
    gpu: (podId: string, query: MetricsQuery = {}) => invoke(metrics.gpu, { ...withPodId(podId), query }),
    memory: (podId: string, query: MetricsQuery = {}) =>
      invoke(metrics.memory, { ...withPodId(podId), query }),
    gpuMemory: (podId: string, query: MetricsQuery = {}) =>
      invoke(metrics.gpuMemory, { ...withPodId(podId), query }),
    storage: (podId: string) => invoke(metrics.storage, withPodId(podId)),
  };
}

function legacyVmsClient(invoke: Invoke) {
  const { vms } = operations.legacy;
  const byVmId = (vmId: string) => ({ ...noInput, params: { vmId } });
  const list = (request: LegacyVmListRequest) => invoke(vms.list, { ...noInput, body: request });
  return {
    create: (request: LegacyVmCreateRequest) => invoke(vms.create, { ...noInput, body: request }),
    terminate: async (vmId: string): Promise<void> => {
      await invoke(vms.terminate, byVmId(vmId));
    },
    types: () => invoke(vms.types, noInput),
    get: (vmId: string) => invoke(vms.get, byVmId(vmId)),
    list,
    /** Every VM (optionally filtered by status), across all pages. */
    listAll: (
      search: { status?: string } = {},
      { pageSize = MAX_PAGE_SIZE }: PageOptions = {},
    ): AsyncIterable<LegacyVm> =>
      everyPage(async (pageNumber) => {
        const result = await list({ search, pageNumber, pageSize });
        return { items: result.records, pages: result.totalPage };
      }),
  };
}

function legacyPodsClient(invoke: Invoke) {
  const { pods } = operations.legacy;
  const byPodId = (podId: string) => ({ ...noInput, params: { podId } });
  return {
    /** Creates a pod and answers its id. */
    create: (request: LegacyPodCreateRequest) => invoke(pods.create, { ...noInput, body: request }),
    resume: async (podId: string): Promise<void> => {
      await invoke(pods.resume, byPodId(podId));
    },
    pause: async (podId: string): Promise<void> => {
      await invoke(pods.pause, byPodId(podId));
    },
    delete: async (podId: string): Promise<void> => {
      await invoke(pods.delete, byPodId(podId));
    },
    get: (podId: string) => invoke(pods.get, byPodId(podId)),
    list: () => invoke(pods.list, noInput),
  };
}

/**
 * Client of the whole GPU cloud API. Cloud ids are strings; times are epoch milliseconds. Every
 * method rejects with a `GpuCloudError` (see errors.ts) that says whether a retry can help.
 */
export class GpuCloudClient {
  readonly vms: ReturnType<typeof vmsClient>;
  readonly pods: ReturnType<typeof podsClient>;
  readonly serverless: ReturnType<typeof serverlessClient>;
  readonly metrics: ReturnType<typeof metricsClient>;
  readonly legacy: {
    readonly vms: ReturnType<typeof legacyVmsClient>;
    readonly pods: ReturnType<typeof legacyPodsClient>;
  };
  /** Calls any operation of `operations` directly, for code that is generic over operations. */
  readonly invoke: Invoke;
  readonly #close: () => Promise<void>;
  readonly #keyRejected: () => boolean;

  constructor(options: ClientOptions) {
    const { invoke, close, keyRejected } = createInvoker(options);
    this.invoke = invoke;
    this.#close = close;
    this.#keyRejected = keyRejected;
    this.vms = vmsClient(invoke);
    this.pods = podsClient(invoke);
    this.serverless = serverlessClient(invoke);
    this.metrics = metricsClient(invoke);
    this.legacy = { vms: legacyVmsClient(invoke), pods: legacyPodsClient(invoke) };
  }

  /** Whether the service refused the key on its last answer (HTTP 401), until a call is accepted again. */
  keyRejected(): boolean {
    return this.#keyRejected();
  }

  /** Releases the connection pool; calls after this fail. */
  close(): Promise<void> {
    return this.#close();
  }
}
