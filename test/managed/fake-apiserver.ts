// A fake of `KubeRequests` that answers as the apiserver does for the calls the managed writer makes:
// objects by path, a resourceVersion per write, merge and JSON patches, preconditions (a stale version is a
// 409, a patch of another uid a 422), deletion held by finalizers. Small on purpose: what it does not know
// it refuses, so a test never passes on a call the real apiserver would answer otherwise.
import { randomUUID } from 'node:crypto';
import type { z } from 'zod';
import {
  KubeApiError,
  type KubeRequest,
  type KubeRequests,
  KubeTransportError,
} from '../../src/kube/client.ts';
import type { ResourceType } from '../../src/kube/resource-type.ts';

type Json = Record<string, unknown>;
type Stored = Json & { metadata: Json & { resourceVersion: string; uid: string } };

const isRecord = (value: unknown): value is Json =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** RFC 7386: `null` removes a member, objects merge, anything else replaces. */
function mergePatch(target: unknown, patch: unknown): unknown {
  if (!isRecord(patch)) return patch;
  const merged: Json = isRecord(target) ? { ...target } : {};
  for (const [key, value] of Object.entries(patch)) {
    if (value === null) delete merged[key];
    else merged[key] = mergePatch(merged[key], value);
  }
  return merged;
}

/** The `replace` and `add` of RFC 6902 on a top-level or second-level member: all the writer sends. */
function jsonPatch(target: Stored, operations: unknown): Stored {
  if (!Array.isArray(operations)) throw new Error('a JSON patch is an array of operations');
  const result = structuredClone(target);
  for (const operation of operations) {
    const { op, path, value } = operation as { op: string; path: string; value: unknown };
    const [first = '', second] = path.split('/').slice(1);
    const parent: Json = second === undefined ? result : (result[first] as Json);
    const member = second ?? first;
    if (op === 'replace' && !(member in parent)) throw new Error(`replace of a missing member ${path}`);
    if (op !== 'replace' && op !== 'add') throw new Error(`the fake knows no ${op}`);
    parent[member] = value;
  }
  return result;
}

/** The kind the tests of the writer keep in the fake. */
export const widgets: ResourceType = {
  group: 'example.com',
  version: 'v1',
  plural: 'widgets',
  kind: 'Widget',
  namespaced: true,
};

export class FakeApiserver implements KubeRequests {
  readonly #objects = new Map<string, Stored>();
  #version = 100;
  /** Every request as it came, for tests that count calls or read what was sent. */
  readonly requests: KubeRequest[] = [];
  /** Runs before the next request is answered: another writer's change, landing in between. */
  beforeNext: (() => void) | undefined;
  /** Runs once the next request is answered: a change that lands between a read and the write after it. */
  afterNext: (() => void) | undefined;

  /** Stores an object as a create would, and answers it as stored. */
  put(path: string, object: Json): Stored {
    const metadata = isRecord(object.metadata) ? object.metadata : {};
    const stored = {
      ...structuredClone(object),
      metadata: { uid: randomUUID(), generation: 1, ...metadata, resourceVersion: this.#next() },
    } as Stored;
    this.#objects.set(path, stored);
    return structuredClone(stored);
  }

  get(path: string): Stored | undefined {
    const stored = this.#objects.get(path);
    return stored && structuredClone(stored);
  }

  async request<S extends z.ZodType>(schema: S, request: KubeRequest): Promise<z.output<S>> {
    this.requests.push(request);
    const hook = this.beforeNext;
    this.beforeNext = undefined;
    hook?.();
    if (request.signal?.aborted) {
      throw new KubeTransportError(request.method, request.path, 'aborted', request.signal.reason);
    }
    const answer = schema.parse(this.#answer(request));
    const after = this.afterNext;
    this.afterNext = undefined;
    after?.();
    return answer;
  }

  #next(): string {
    this.#version += 1;
    return String(this.#version);
  }

  #answer(request: KubeRequest): unknown {
    const { method, path } = request;
    const fail = (status: number, reason: string, detail: string) =>
      new KubeApiError(method, path, status, reason, detail);
    if (method === 'POST') {
      const body = request.body as Json;
      const name = (body.metadata as Json).name as string;
      const objectPath = `${path}/${name}`;
      if (this.#objects.has(objectPath)) throw fail(409, 'AlreadyExists', `"${name}" already exists`);
      return this.put(objectPath, body);
    }
    const status = path.endsWith('/status');
    const objectPath = status ? path.slice(0, -'/status'.length) : path;
    const stored = this.#objects.get(objectPath);
    if (!stored) throw fail(404, 'NotFound', `${objectPath} not found`);
    if (method === 'GET') return structuredClone(stored);
    if (method === 'DELETE') {
      const { preconditions = {} } = (request.body ?? {}) as { preconditions?: Json };
      if (preconditions.uid !== undefined && preconditions.uid !== stored.metadata.uid) {
        throw fail(409, 'Conflict', 'Precondition failed: UID in precondition does not match');
      }
      if (
        preconditions.resourceVersion !== undefined &&
        preconditions.resourceVersion !== stored.metadata.resourceVersion
      ) {
        throw fail(409, 'Conflict', 'Precondition failed: ResourceVersion in precondition does not match');
      }
      const finalizers = stored.metadata.finalizers;
      if (Array.isArray(finalizers) && finalizers.length > 0) {
        stored.metadata.deletionTimestamp = new Date().toISOString();
        stored.metadata.resourceVersion = this.#next();
      } else this.#objects.delete(objectPath);
      return { kind: 'Status', status: 'Success' };
    }
    if (method !== 'PATCH') throw new Error(`the fake knows no ${method}`);
    const patched =
      request.patchType === 'application/json-patch+json'
        ? jsonPatch(stored, request.body)
        : (mergePatch(stored, request.body) as Stored);
    if (patched.metadata.uid !== stored.metadata.uid) {
      throw fail(
        422,
        'Invalid',
        `metadata.uid: Invalid value: "${patched.metadata.uid}": field is immutable`,
      );
    }
    if (patched.metadata.resourceVersion !== stored.metadata.resourceVersion) {
      throw fail(
        409,
        'Conflict',
        'the object has been modified; please apply your changes to the latest version',
      );
    }
    // The status subresource writes status alone; the main resource everything but status.
    const next: Stored = status
      ? { ...stored, status: patched.status }
      : { ...patched, ...(stored.status === undefined ? {} : { status: stored.status }) };
    const specChanged = JSON.stringify(next.spec) !== JSON.stringify(stored.spec);
    next.metadata = {
      ...(status ? stored.metadata : patched.metadata),
      resourceVersion: this.#next(),
      generation: Number(stored.metadata.generation ?? 1) + (specChanged ? 1 : 0),
    };
    this.#objects.set(objectPath, next);
    return structuredClone(next);
  }
}
