/** Each worker of an endpoint holds the GPUs of its largest resource: the cloud places it on any of them. */
export function gpusPerWorker(resources: ReadonlyArray<{ gpuCount: number }>): number {
  return Math.max(0, ...resources.map((resource) => resource.gpuCount));
}
