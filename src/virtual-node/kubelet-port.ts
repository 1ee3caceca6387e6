// The port each virtual node's kubelet API serves on. The apiserver reaches a node at its InternalIP and
// `daemonEndpoints.kubeletEndpoint.Port` and names no node in a request such as /stats/summary, so every
// node has a port of its own on the leader, picked from the configured range: the one a hash of its name
// falls on, or the next one no other virtual node holds. Kept on the Node (its annotation), so a restart
// or a new leader serves each node on the same port. Pure.
import { createHash } from 'node:crypto';

/** `--virtual-node-ports`: from `first` to `last`, both included. */
export interface PortRange {
  readonly first: number;
  readonly last: number;
}

/** Whether `port` is in `range`. */
export function inRange(port: number, range: PortRange): boolean {
  return Number.isInteger(port) && port >= range.first && port <= range.last;
}

/**
 * The port of node `name`: `recorded` when it is in the range and no other node holds it, else the port
 * its name hashes to or the first free one after it (wrapping round); undefined when every port is held.
 * `held` maps each port to the other node that holds it.
 */
export function choosePort(
  name: string,
  recorded: number | undefined,
  range: PortRange,
  held: ReadonlyMap<number, string>,
): number | undefined {
  const free = (port: number) => {
    const holder = held.get(port);
    return holder === undefined || holder === name;
  };
  if (recorded !== undefined && inRange(recorded, range) && free(recorded)) return recorded;
  const size = range.last - range.first + 1;
  const start = createHash('sha256').update(name).digest().readUInt32BE(0) % size;
  for (let step = 0; step < size; step++) {
    const port = range.first + ((start + step) % size);
    if (free(port)) return port;
  }
  return undefined;
}

/** The port recorded on a Node (its annotation's value), undefined when there is none or it is no port. */
export function recordedPort(annotation: string | undefined): number | undefined {
  if (annotation === undefined || !/^\d{1,5}$/.test(annotation)) return undefined;
  const port = Number(annotation);
  return port >= 1 && port <= 65535 ? port : undefined;
}
