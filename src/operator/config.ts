import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { z } from 'zod';
import { MIN_TOKEN_LENGTH } from './callback-server.ts';

const configSchema = z.object({
  apiUrl: z
    .url({
      protocol: /^https?$/,
      error: (issue) => (issue.input === undefined ? 'is required' : 'must be an http:// or https:// URL'),
    })
    .refine((url) => {
      const parsed = URL.parse(url);
      return parsed === null || (parsed.username === '' && parsed.password === '');
    }, 'must not carry user:password; the API key comes from --api-key-file or GPUCLOUD_API_KEY'),
  apiKeyFile: z.string().optional(),
  namespace: z
    .string()
    .default('')
    .transform((text) =>
      text
        .split(',')
        .map((name) => name.trim())
        .filter((name) => name !== ''),
    )
    .pipe(
      z.array(
        z.string().regex(/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/, 'each namespace must be a valid namespace name'),
      ),
    ),
  kubeconfig: z.string().optional(),
  context: z.string().min(1).optional(),
  leaderElect: switchedOn('false'),
  leaseName: z.string().min(1).default('gpucloud-operator'),
  leaseNamespace: z.string().min(1).default('default'),
  leaseDurationSeconds: positive().default(15),
  renewDeadlineSeconds: positive().default(10),
  retryPeriodSeconds: positive().default(2),
  healthPort: port().default(8081),
  callbackPort: port().default(0),
  callbackBindAddress: z.union([z.ipv4(), z.ipv6()]).default('0.0.0.0'),
  callbackBaseUrl: z.url().optional(),
  concurrency: z.coerce.number().int('must be a whole number').min(1).default(16),
  pollIntervalSeconds: positive().default(30),
  apiRequestsPerSecond: positive().default(50),
  apiTimeoutSeconds: positive().default(30),
  detailsCallsPerSecond: positive().default(2),
  detailsIntervalSeconds: positive().default(300),
  idleChecksPerSecond: positive().default(1),
  idleCheckIntervalSeconds: positive().default(300),
  queueIntervalSeconds: positive().default(15),
  resyncMinutes: positive().default(60),
  secretIntervalSeconds: positive().default(30),
  defaultAdoption: switchedOn('true'),
  logLevel: z.enum(['trace', 'debug', 'info', 'warn', 'error']).default('info'),
  tenantApiPort: port().default(0),
  tenantApiBindAddress: z.union([z.ipv4(), z.ipv6()]).default('0.0.0.0'),
  tenantApiCertFile: z.string().optional(),
  tenantApiKeyFile: z.string().optional(),
  tenantApiTlsSecret: z
    .string()
    .regex(/^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/, 'must be a Secret name')
    .optional(),
  tenantApiAdvertiseAddress: z.union([z.ipv4(), z.ipv6()]).optional(),
  tenantApiService: z
    .string()
    .regex(/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/, 'must be a Service name')
    .optional(),
  tenantApiNamespace: z
    .string()
    .regex(/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/, 'must be a namespace name')
    .default('default'),
  tenantApiRequestsPerSecond: positive().default(5),
  tenantApiStreamsPerUser: z.coerce.number().int('must be a whole number').min(1).default(2),
  tenantApiStreamsPerAccount: z.coerce.number().int('must be a whole number').min(1).default(10),
  virtualNodes: switchedOn('false'),
  virtualNodeAddress: z.union([z.ipv4(), z.ipv6()]).default('127.0.0.1'),
  virtualNodePorts: portRange().default({ first: 10250, last: 10259 }),
  virtualNodeTlsCertFile: z.string().optional(),
  virtualNodeTlsKeyFile: z.string().optional(),
  virtualNodeClientCaFile: z.string().optional(),
});

type Setting = keyof z.input<typeof configSchema>;

/**
 * Where each setting comes from: a flag, or the environment variable beside it; flags win. The API key
 * comes from a file (a mounted Secret) or the environment, never a flag: flags show in `ps`.
 */
const sources: Readonly<Record<Setting, { flag: string; env: string }>> = {
  apiUrl: { flag: 'api-url', env: 'GPUCLOUD_API_URL' },
  apiKeyFile: { flag: 'api-key-file', env: 'GPUCLOUD_API_KEY_FILE' },
  namespace: { flag: 'namespace', env: 'WATCH_NAMESPACE' },
  kubeconfig: { flag: 'kubeconfig', env: 'KUBECONFIG' },
  context: { flag: 'context', env: 'KUBECONTEXT' },
  leaderElect: { flag: 'leader-elect', env: 'LEADER_ELECT' },
  leaseName: { flag: 'lease-name', env: 'LEASE_NAME' },
  leaseNamespace: { flag: 'lease-namespace', env: 'POD_NAMESPACE' },
  leaseDurationSeconds: { flag: 'lease-duration', env: 'LEASE_DURATION_SECONDS' },
  renewDeadlineSeconds: { flag: 'renew-deadline', env: 'RENEW_DEADLINE_SECONDS' },
  retryPeriodSeconds: { flag: 'retry-period', env: 'RETRY_PERIOD_SECONDS' },
  healthPort: { flag: 'health-port', env: 'HEALTH_PORT' },
  callbackPort: { flag: 'callback-port', env: 'CALLBACK_PORT' },
  callbackBindAddress: { flag: 'callback-bind-address', env: 'CALLBACK_BIND_ADDRESS' },
  callbackBaseUrl: { flag: 'callback-base-url', env: 'GPUCLOUD_CALLBACK_BASE_URL' },
  concurrency: { flag: 'concurrency', env: 'CONCURRENCY' },
  pollIntervalSeconds: { flag: 'poll-interval', env: 'POLL_INTERVAL_SECONDS' },
  apiRequestsPerSecond: { flag: 'api-rps', env: 'GPUCLOUD_API_RPS' },
  apiTimeoutSeconds: { flag: 'api-timeout', env: 'GPUCLOUD_API_TIMEOUT_SECONDS' },
  detailsCallsPerSecond: { flag: 'details-rps', env: 'DETAILS_RPS' },
  detailsIntervalSeconds: { flag: 'details-interval', env: 'DETAILS_INTERVAL_SECONDS' },
  idleChecksPerSecond: { flag: 'idle-check-rps', env: 'IDLE_CHECK_RPS' },
  idleCheckIntervalSeconds: { flag: 'idle-check-interval', env: 'IDLE_CHECK_INTERVAL_SECONDS' },
  queueIntervalSeconds: { flag: 'queue-interval', env: 'QUEUE_INTERVAL_SECONDS' },
  resyncMinutes: { flag: 'resync', env: 'RESYNC_MINUTES' },
  secretIntervalSeconds: { flag: 'secret-interval', env: 'SECRET_INTERVAL_SECONDS' },
  defaultAdoption: { flag: 'default-adoption', env: 'GPUCLOUD_DEFAULT_ADOPTION' },
  logLevel: { flag: 'log-level', env: 'LOG_LEVEL' },
  tenantApiPort: { flag: 'tenant-api-port', env: 'TENANT_API_PORT' },
  tenantApiBindAddress: { flag: 'tenant-api-bind-address', env: 'TENANT_API_BIND_ADDRESS' },
  tenantApiCertFile: { flag: 'tenant-api-cert-file', env: 'TENANT_API_CERT_FILE' },
  tenantApiKeyFile: { flag: 'tenant-api-key-file', env: 'TENANT_API_KEY_FILE' },
  tenantApiTlsSecret: { flag: 'tenant-api-tls-secret', env: 'TENANT_API_TLS_SECRET' },
  tenantApiAdvertiseAddress: { flag: 'tenant-api-advertise-address', env: 'POD_IP' },
  tenantApiService: { flag: 'tenant-api-service', env: 'TENANT_API_SERVICE' },
  tenantApiNamespace: { flag: 'tenant-api-namespace', env: 'TENANT_API_NAMESPACE' },
  tenantApiRequestsPerSecond: { flag: 'tenant-api-rps', env: 'TENANT_API_RPS' },
  tenantApiStreamsPerUser: { flag: 'tenant-api-streams-per-user', env: 'TENANT_API_STREAMS_PER_USER' },
  tenantApiStreamsPerAccount: {
    flag: 'tenant-api-streams-per-account',
    env: 'TENANT_API_STREAMS_PER_ACCOUNT',
  },
  virtualNodes: { flag: 'virtual-nodes', env: 'VIRTUAL_NODES' },
  virtualNodeAddress: { flag: 'virtual-node-address', env: 'POD_IP' },
  virtualNodePorts: { flag: 'virtual-node-ports', env: 'VIRTUAL_NODE_PORTS' },
  virtualNodeTlsCertFile: { flag: 'virtual-node-tls-cert-file', env: 'VIRTUAL_NODE_TLS_CERT_FILE' },
  virtualNodeTlsKeyFile: { flag: 'virtual-node-tls-key-file', env: 'VIRTUAL_NODE_TLS_KEY_FILE' },
  virtualNodeClientCaFile: { flag: 'virtual-node-client-ca-file', env: 'VIRTUAL_NODE_CLIENT_CA_FILE' },
};

export type OperatorConfig = z.output<typeof configSchema> & {
  /** From the key file or GPUCLOUD_API_KEY. Kept out of every log line by the logger's redaction. */
  apiKey: string;
  /** From GPUCLOUD_CALLBACK_TOKEN; required when callbacks are served. */
  callbackToken: string | undefined;
};

/** A setting that is missing or wrong, named as the user wrote it (flag and variable). */
export class ConfigError extends Error {
  override readonly name = 'ConfigError';
}

/** Every flag the operator takes, for `--help` and the chart's documentation. */
export const FLAGS = sources;

export function loadConfig(argv: readonly string[], env: NodeJS.ProcessEnv): OperatorConfig {
  const options = Object.fromEntries(
    Object.values(sources).map(({ flag }) => [flag, { type: 'string' as const }]),
  );
  let flags: Record<string, string | boolean | undefined>;
  try {
    ({ values: flags } = parseArgs({ args: [...argv], options, strict: true, allowPositionals: false }));
  } catch (error) {
    throw new ConfigError(error instanceof Error ? error.message : String(error));
  }
  const input = Object.fromEntries(
    Object.entries(sources).map(([name, { flag, env: variable }]) => [
      name,
      flags[flag] || env[variable] || undefined,
    ]),
  );
  const parsed = configSchema.safeParse(input);
  if (!parsed.success) {
    const problems = parsed.error.issues.map((issue) => {
      const source = sources[issue.path[0] as Setting];
      return `--${source.flag} / ${source.env}: ${issue.message}`;
    });
    throw new ConfigError(problems.join('; '));
  }
  const callbackToken = env.GPUCLOUD_CALLBACK_TOKEN || undefined;
  if (parsed.data.callbackPort !== 0 && (!callbackToken || !parsed.data.callbackBaseUrl)) {
    throw new ConfigError(
      '--callback-port needs --callback-base-url (the URL the cloud reaches) and GPUCLOUD_CALLBACK_TOKEN (its secret)',
    );
  }
  if (callbackToken !== undefined && callbackToken.length < MIN_TOKEN_LENGTH) {
    throw new ConfigError(
      `GPUCLOUD_CALLBACK_TOKEN must be at least ${MIN_TOKEN_LENGTH} characters (e.g. openssl rand -hex 32)`,
    );
  }
  checkTenantApi(parsed.data);
  checkKubeletApi(parsed.data);
  return { ...parsed.data, apiKey: readApiKey(parsed.data.apiKeyFile, env), callbackToken };
}

/** The tenant API's serving pair comes from files, or from a Secret the operator keeps for its Service. */
function checkTenantApi(config: z.output<typeof configSchema>): void {
  const { tenantApiPort, tenantApiCertFile, tenantApiKeyFile, tenantApiTlsSecret, tenantApiService } = config;
  if (tenantApiPort === 0) return;
  const files = tenantApiCertFile !== undefined || tenantApiKeyFile !== undefined;
  if (files && tenantApiTlsSecret !== undefined) {
    throw new ConfigError(
      '--tenant-api-cert-file/--tenant-api-key-file and --tenant-api-tls-secret exclude each other',
    );
  }
  if (files && (!tenantApiCertFile || !tenantApiKeyFile)) {
    throw new ConfigError('--tenant-api-cert-file and --tenant-api-key-file go together');
  }
  if (!files && (!tenantApiTlsSecret || !tenantApiService)) {
    throw new ConfigError(
      '--tenant-api-port needs its serving pair: --tenant-api-cert-file and --tenant-api-key-file, or --tenant-api-tls-secret and --tenant-api-service (the operator makes and keeps it)',
    );
  }
}

/** The virtual nodes' kubelet API serves with its three files, or not at all; and only for virtual nodes. */
function checkKubeletApi(config: z.output<typeof configSchema>): void {
  const files = [config.virtualNodeTlsCertFile, config.virtualNodeTlsKeyFile, config.virtualNodeClientCaFile];
  if (files.some((file) => file !== undefined) && !files.every((file) => file !== undefined)) {
    throw new ConfigError(
      '--virtual-node-tls-cert-file, --virtual-node-tls-key-file and --virtual-node-client-ca-file go together: the kubelet API serves with all three',
    );
  }
  // A kubelet API with no nodes would serve nothing: say so rather than ignore the files.
  if (files.some((file) => file !== undefined) && !config.virtualNodes) {
    throw new ConfigError(
      "--virtual-node-tls-cert-file, --virtual-node-tls-key-file and --virtual-node-client-ca-file serve the virtual nodes' kubelet API: set --virtual-nodes=true / VIRTUAL_NODES=true too",
    );
  }
}

function readApiKey(file: string | undefined, env: NodeJS.ProcessEnv): string {
  const key = file ? readKeyFile(file) : env.GPUCLOUD_API_KEY;
  if (!key)
    throw new ConfigError('no API key: set --api-key-file / GPUCLOUD_API_KEY_FILE, or GPUCLOUD_API_KEY');
  return key;
}

function readKeyFile(file: string): string {
  try {
    return readFileSync(file, 'utf8').trim();
  } catch (error) {
    throw new ConfigError(
      `cannot read the API key file ${file}: ${(error as NodeJS.ErrnoException).code ?? error}`,
    );
  }
}

function port() {
  return z.coerce.number().int().min(0).max(65535);
}

/** `10250-10259`, or one port (`10250`): a range of one. */
function portRange() {
  return z
    .string()
    .regex(/^\d{1,5}(-\d{1,5})?$/, 'must be a port or a range of ports such as 10250-10259')
    .transform((text) => {
      const [first, last = first] = text.split('-').map(Number);
      return { first: first ?? 0, last: last ?? 0 };
    })
    .refine(({ first, last }) => first >= 1 && last <= 65535 && first <= last, {
      message: 'must be ports from 1 to 65535, the first no higher than the last',
    });
}

function positive() {
  return z.coerce.number().positive();
}

/** A setting that is `true` or `false` as text (a flag's value, an environment variable), read as a boolean. */
function switchedOn(fallback: 'true' | 'false') {
  return z
    .enum(['true', 'false'])
    .default(fallback)
    .transform((text) => text === 'true');
}

/** Plain HTTP is fine to a simulator on this machine; anywhere else the key would cross the network in clear. */
export function insecureApiUrl(apiUrl: string): boolean {
  const { protocol, hostname } = new URL(apiUrl);
  const loopback = hostname === 'localhost' || hostname === '[::1]' || /^127\./.test(hostname);
  return protocol === 'http:' && !loopback;
}
