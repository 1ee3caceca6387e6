// The typed client as a library: `import { GpuCloudClient } from 'gpucloud-operator/client'`. Everything a
// caller needs to make calls, read their answers and tell the errors apart; nothing of the operator.
export { GpuCloudClient, type PageOptions } from './client.ts';
export type { ApiKeySource, ClientOptions } from './client-options.ts';
export {
  CloudApiError,
  type CloudApiErrorDetails,
  type FieldIssue,
  GpuCloudError,
  RequestValidationError,
  ResponseShapeError,
  TransportError,
} from './errors.ts';
export { operations } from './operations.ts';
export * from './schemas/index.ts';
