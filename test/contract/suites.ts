import type { Operation } from '../../src/api/operation.ts';

/**
 * Which operations each contract suite file (`<suite>.test.ts`) answers for, by name prefix. Each
 * file proves at run time that it called all of its operations with success; coverage.test.ts
 * proves that the suites together claim every operation of the API, each exactly once.
 */
export const SUITES: Readonly<Record<string, readonly string[]>> = {
  vms: ['vms.'],
  pods: ['pods.'],
  serverless: ['serverless.'],
  metrics: ['metrics.'],
  legacy: ['legacy.vms.', 'legacy.pods.'],
};

export function operationsOfSuite(suite: string, operations: readonly Operation[]): string[] {
  const prefixes = SUITES[suite] ?? [];
  return operations
    .map((operation) => operation.name)
    .filter((name) => prefixes.some((prefix) => name.startsWith(prefix)));
}
