export * from './common.ts';
export * from './gpus.ts';
export * from './legacy-pods.ts';
export * from './legacy-vms.ts';
export * from './metrics.ts';
export * from './pods.ts';
export * from './serverless.ts';
export * from './vms.ts';
