import { z } from 'zod';

// The chart's values, in one place: the generator writes values.yaml (defaults and comments),
// values.schema.json (what helm checks every install against) and the table in docs/install.md from it.

const DNS_SUBDOMAIN = /^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*)?$/;

/** A Kubernetes object name, or empty for "the chart's default". */
function egressTarget(ports: number[], description: string) {
  return z
    .object({
      cidrs: z.array(z.cidrv4().or(z.cidrv6())).default([]).describe('Address ranges, e.g. 203.0.113.10/32.'),
      ports: z.array(z.int().min(1).max(65535)).min(1).default(ports).describe('TCP ports.'),
    })
    .strict()
    .describe(description);
}

function objectName(description: string) {
  return z.string().max(253).regex(DNS_SUBDOMAIN).default('').describe(description);
}

function secretDataKey(fallback: string, description: string) {
  return z
    .string()
    .min(1)
    .max(253)
    .regex(/^[-._a-zA-Z0-9]+$/)
    .default(fallback)
    .describe(description);
}

function positive(fallback: number, description: string) {
  return z.number().positive().default(fallback).describe(description);
}

function port(fallback: number, description: string) {
  return z.int().min(1).max(65535).default(fallback).describe(description);
}

function stringMap(description: string) {
  return z.record(z.string(), z.string()).default({}).describe(description);
}

/** A Kubernetes object the chart passes through as given (affinity, a security context, …). */
function passThrough(fallback: Record<string, unknown>, description: string) {
  return z.record(z.string(), z.unknown()).default(fallback).describe(description);
}

function passThroughList(description: string) {
  return z.array(z.record(z.string(), z.unknown())).default([]).describe(description);
}

const httpUrl = z.union([z.literal(''), z.string().regex(/^https?:\/\/[^\s]+$/)]);

function probe(period: number) {
  return z
    .object({
      initialDelaySeconds: z.int().min(0).default(0).describe('Seconds before the first probe.'),
      periodSeconds: z.int().min(1).default(period).describe('Seconds between probes.'),
      timeoutSeconds: z.int().min(1).default(5).describe('Seconds a probe may take.'),
      failureThreshold: z.int().min(1).default(3).describe('Consecutive failures that count.'),
    })
    .strict();
}

export const valuesSchema = z
  .object({
    nameOverride: z.string().max(63).default('').describe('Replaces the chart name in object names.'),
    fullnameOverride: z.string().max(63).default('').describe('Replaces the whole `<release>-<chart>` name.'),
    replicaCount: z
      .int()
      .min(1)
      .default(1)
      .describe(
        'Operator replicas. More than one needs `leaderElection.enabled`: one leads, the rest stand by.',
      ),
    image: z
      .object({
        repository: z
          .string()
          .min(1)
          .default('ghcr.io/gpucloud/gpucloud-operator')
          .describe('Image repository.'),
        tag: z.string().default('').describe('Image tag; the chart appVersion when empty.'),
        digest: z
          .string()
          .regex(/^(sha256:[a-f0-9]{64})?$/)
          .default('')
          .describe('Image digest (`sha256:…`); pins the image and wins over the tag.'),
        pullPolicy: z
          .enum(['Always', 'IfNotPresent', 'Never'])
          .default('IfNotPresent')
          .describe('Pull policy.'),
      })
      .strict()
      .describe('The operator image.'),
    imagePullSecrets: z
      .array(z.object({ name: z.string().min(1) }).strict())
      .default([])
      .describe('Secrets for pulling the image from a private registry.'),

    apiUrl: httpUrl
      .default('')
      .describe(
        'Base URL of the GPU cloud API. When empty, read from key `apiKey.existingSecretUrlKey` of the API key Secret.',
      ),
    apiKey: z
      .object({
        existingSecret: objectName(
          'Secret that holds the API key (you create it). Empty: `<fullname>-credentials`, which the chart ' +
            'creates when `apiKey.value` is set and you create otherwise.',
        ),
        existingSecretKey: secretDataKey('api-key', 'Key of the API key in the Secret.'),
        existingSecretUrlKey: secretDataKey(
          'api-url',
          'Key of the API URL in the Secret, used when `apiUrl` is empty.',
        ),
        value: z
          .string()
          .default('')
          .describe(
            'The API key itself: the chart creates the Secret. Prefer `existingSecret` outside of tests.',
          ),
      })
      .strict()
      .describe(
        'The GPU cloud API key, mounted as a file for `--api-key-file`; never a flag or a plain env var.',
      ),
    watchNamespaces: z
      .array(z.string().max(63).regex(DNS_SUBDOMAIN))
      .default([])
      .describe(
        'Watch custom resources in these namespaces only, and grant access (Secrets included) in them only, one Role each; they must exist. Empty: every namespace, with cluster-wide grants (get on Secrets in every namespace, since any may hold a secretKeyRef).',
      ),
    kubeconfig: z
      .object({
        existingSecret: objectName(
          'Secret with a kubeconfig to manage another cluster than the one the operator runs in. Empty: in-cluster.',
        ),
        key: secretDataKey('kubeconfig', 'Key of the kubeconfig in the Secret.'),
        context: z
          .string()
          .max(253)
          .default('')
          .describe('Context of that kubeconfig to use (`--context`). Empty: its current context.'),
      })
      .strict()
      .describe('`--kubeconfig`: which cluster the operator manages.'),
    leaderElection: z
      .object({
        enabled: z
          .boolean()
          .default(true)
          .describe('Elect one active replica through a Lease. Required when `replicaCount` > 1.'),
        leaseName: objectName('Name of the Lease. Empty: the release fullname.'),
        leaseNamespace: objectName('Namespace of the Lease. Empty: the release namespace.'),
        leaseDurationSeconds: positive(
          15,
          'Seconds a standby waits after the last renewal before taking over (`--lease-duration`).',
        ),
        renewDeadlineSeconds: positive(
          10,
          'Seconds the leader keeps trying to renew before it steps down (`--renew-deadline`).',
        ),
        retryPeriodSeconds: positive(
          2,
          'Seconds between attempts to acquire or renew the Lease (`--retry-period`).',
        ),
      })
      .strict()
      .describe('Leader election (`--leader-elect` and the Lease flags).'),
    healthPort: port(8081, 'Port of `/healthz`, `/readyz` and `/metrics` (`--health-port`).'),
    callbacks: z
      .object({
        enabled: z
          .boolean()
          .default(false)
          .describe(
            'Serve pod lifecycle callbacks, so the operator reacts at once instead of at the next poll.',
          ),
        port: port(8082, 'Container port of the callback server (`--callback-port`).'),
        bindAddress: z
          .union([z.ipv4(), z.ipv6()])
          .default('0.0.0.0')
          .describe('Address the callback server listens on (`--callback-bind-address`).'),
        baseUrl: httpUrl
          .default('')
          .describe(
            'URL at which the cloud reaches the callback Service (`--callback-base-url`); required when enabled.',
          ),
        tokenSecretKey: secretDataKey(
          'callback-token',
          'Key of the callback token in the API key Secret (`GPUCLOUD_CALLBACK_TOKEN`).',
        ),
        token: z
          .string()
          .default('')
          .refine(
            (token) => token === '' || token.length >= 32,
            'the callback token needs at least 32 characters',
          )
          .describe(
            'The callback token (at least 32 characters), when the chart creates the Secret (`apiKey.value`).',
          ),
        service: z
          .object({
            type: z
              .enum(['ClusterIP', 'NodePort', 'LoadBalancer'])
              .default('ClusterIP')
              .describe('Service type.'),
            port: port(80, 'Service port.'),
            annotations: stringMap('Service annotations (e.g. for a cloud load balancer).'),
          })
          .strict()
          .describe(
            'The Service in front of the callback port; expose it with your ingress or load balancer.',
          ),
      })
      .strict()
      .describe(
        'Pod lifecycle callbacks from the cloud: only a hint to re-read a pod, never trusted as state.',
      ),
    operator: z
      .object({
        concurrency: positive(16, 'Resources reconciled at once (`--concurrency`).'),
        pollIntervalSeconds: positive(
          30,
          'Seconds between list calls that refresh cloud state (`--poll-interval`).',
        ),
        apiRequestsPerSecond: positive(50, 'Client-side rate limit of GPU cloud API calls (`--api-rps`).'),
        apiTimeoutSeconds: positive(30, 'Seconds one GPU cloud API request may take (`--api-timeout`).'),
        detailsCallsPerSecond: positive(
          2,
          'Budget of per-resource detail calls, e.g. metrics (`--details-rps`).',
        ),
        detailsIntervalSeconds: positive(
          300,
          'Seconds between detail refreshes of one resource (`--details-interval`).',
        ),
        idleChecksPerSecond: positive(
          1,
          'Budget of GPU-utilisation reads for idle stop, per kind and account (`--idle-check-rps`): one read per check of a pod with spec.idleStop.',
        ),
        idleCheckIntervalSeconds: positive(
          300,
          'Seconds between idle checks of one pod at most (`--idle-check-interval`); with more pods than the budget allows, each is checked less often.',
        ),
        queueIntervalSeconds: positive(
          15,
          'Seconds within which the task counts of an autoscaled endpoint are fresh: one count call per autoscaled endpoint per interval (`--queue-interval`).',
        ),
        resyncMinutes: positive(60, 'Minutes between full resyncs of every resource (`--resync`).'),
        secretIntervalSeconds: positive(
          30,
          'Seconds between two reads of each Secret resources take values from (`--secret-interval`): a rotation reaches an endpoint within it, and a pod reports it. One get per Secret in use per interval, by name.',
        ),
        defaultAdoption: z
          .boolean()
          .default(true)
          .describe(
            'Whether resources on the implicit default account (the API key above) may adopt existing cloud objects by id (`--default-adoption`). Set false when several teams share that account.',
          ),
        logLevel: z
          .enum(['trace', 'debug', 'info', 'warn', 'error'])
          .default('info')
          .describe(
            'Log level (`--log-level`); `debug` adds a `reconcile finished` line for every reconcile, with its resource and `result`.',
          ),
      })
      .strict()
      .describe('Operator tuning; each value is the flag named beside it.'),
    extraEnv: passThroughList('Extra environment variables of the operator container (e.g. NODE_OPTIONS).'),

    serviceAccount: z
      .object({
        create: z.boolean().default(true).describe('Create the ServiceAccount.'),
        name: objectName('Name of the ServiceAccount. Empty: the release fullname.'),
        annotations: stringMap('ServiceAccount annotations.'),
      })
      .strict()
      .describe('The identity the operator talks to the Kubernetes API as.'),
    admissionPolicy: z
      .object({
        enabled: z
          .boolean()
          .default(true)
          .describe(
            'Install the ValidatingAdmissionPolicies (Kubernetes 1.30+) that let only the operator write its bookkeeping annotations, keep external-id fixed while a resource holds a cloud object, and refuse to delete a resource annotated gpucloud.io/deletion-protection: "true".',
          ),
      })
      .strict()
      .describe(
        'Admission guard of the operator annotations and of deletion protection, which CRD validation rules cannot see.',
      ),
    rbac: z
      .object({ create: z.boolean().default(true).describe('Create the (Cluster)Roles and their bindings.') })
      .strict()
      .describe('Least-privilege RBAC for the operator.'),

    podAnnotations: stringMap('Annotations of the operator pod.'),
    podLabels: stringMap('Extra labels of the operator pod.'),
    podSecurityContext: passThrough(
      {
        runAsNonRoot: true,
        runAsUser: 65532,
        runAsGroup: 65532,
        fsGroup: 65532,
        seccompProfile: { type: 'RuntimeDefault' },
      },
      'Pod security context. `fsGroup` lets the non-root user read the mounted Secrets.',
    ),
    securityContext: passThrough(
      {
        allowPrivilegeEscalation: false,
        readOnlyRootFilesystem: true,
        runAsNonRoot: true,
        capabilities: { drop: ['ALL'] },
        seccompProfile: { type: 'RuntimeDefault' },
      },
      'Container security context.',
    ),
    resources: passThrough(
      { requests: { cpu: '100m', memory: '128Mi' }, limits: { memory: '512Mi' } },
      'Container resources. The image sizes the V8 heap for the 512Mi limit (NODE_OPTIONS in the Dockerfile); with a higher limit, raise the heap too, through extraEnv NODE_OPTIONS.',
    ),
    livenessProbe: probe(10).describe('Timing of the liveness probe on `/healthz`.'),
    readinessProbe: probe(5).describe('Timing of the readiness probe on `/readyz`.'),
    terminationGracePeriodSeconds: z
      .int()
      .min(0)
      .default(30)
      .describe('Seconds the operator gets after SIGTERM to finish in-flight work and release its Lease.'),
    priorityClassName: z.string().default('').describe('Priority class of the operator pod.'),
    nodeSelector: stringMap('Node selector.'),
    tolerations: passThroughList('Tolerations.'),
    affinity: passThrough({}, 'Affinity.'),
    topologySpreadConstraints: passThroughList('Topology spread constraints.'),

    metrics: z
      .object({
        service: z
          .object({
            enabled: z.boolean().default(true).describe('Create a ClusterIP Service for the metrics port.'),
            port: port(8081, 'Service port.'),
            annotations: stringMap('Service annotations (e.g. `prometheus.io/scrape`).'),
          })
          .strict()
          .describe('The Service that exposes `/metrics`.'),
        serviceMonitor: z
          .object({
            enabled: z.boolean().default(false).describe('Create a Prometheus Operator ServiceMonitor.'),
            interval: z.string().default('30s').describe('Scrape interval.'),
            scrapeTimeout: z.string().default('10s').describe('Scrape timeout.'),
            labels: stringMap('Extra labels, e.g. the one your Prometheus selects ServiceMonitors by.'),
          })
          .strict()
          .describe('Prometheus Operator scraping; needs the metrics Service.'),
        prometheusRule: z
          .object({
            enabled: z
              .boolean()
              .default(false)
              .describe(
                'Create a Prometheus Operator PrometheusRule with the alerts of docs/observability.md.',
              ),
            labels: stringMap('Extra labels, e.g. the one your Prometheus selects rules by.'),
            budgetAlertPercent: z
              .number()
              .positive()
              .max(100)
              .default(90)
              .describe(
                "GpucloudBudgetNearlySpent fires when what a ProviderConfig budget covers costs more than this percentage of the budget's limit per hour: the limit is the budget's own, set in the ProviderConfig.",
              ),
            notReadyMinutes: z
              .int()
              .positive()
              .default(30)
              .describe('GpucloudResourceNotReady fires for a resource not Ready this long.'),
            deletionStuckMinutes: z
              .int()
              .positive()
              .default(15)
              .describe('GpucloudDeletionStuck fires for a deletion held this long by the finalizer.'),
          })
          .strict()
          .describe('Alert rules for the operator and the fleet.'),
        grafanaDashboard: z
          .object({
            enabled: z
              .boolean()
              .default(false)
              .describe('Ship the Grafana dashboard as a ConfigMap for the Grafana sidecar.'),
            labels: z
              .record(z.string(), z.string())
              .default({ grafana_dashboard: '1' })
              .describe('Labels the Grafana sidecar selects dashboards by.'),
          })
          .strict()
          .describe('The Grafana dashboard of deploy/grafana/.'),
      })
      .strict()
      .describe('Prometheus metrics on `/metrics` of the health port.'),
    virtualNode: z
      .object({
        enabled: z
          .boolean()
          .default(false)
          .describe(
            "Virtual nodes (`--virtual-nodes`): a ProviderConfig's spec.virtualNode registers a Node whose Pods run on the GPU cloud. Off by default: it grants the operator Nodes, and the patch and delete of Pods and the get of ConfigMaps in every namespace (docs/virtual-node.md).",
          ),
        ports: z
          .object({
            first: port(10250, "First port of the nodes' kubelet APIs."),
            count: z
              .int()
              .min(1)
              .max(64)
              .default(10)
              .describe('How many ports from the first: the most virtual nodes served at once (1 to 64).'),
          })
          .strict()
          .describe(
            "The ports each virtual node's kubelet API is given one of, named in its daemonEndpoints (`--virtual-node-ports`): each a container port.",
          ),
        tlsSecret: objectName(
          "Secret holding the kubelet API's serving pair and the CA of the apiserver's kubelet client certificate " +
            '(keys tls.crt, tls.key, ca.crt). Empty: the kubelet API is not served.',
        ),
      })
      .strict()
      .describe(
        'The virtual nodes (docs/virtual-node.md) and their kubelet API: `kubectl logs` of Pods on a virtual node, and their usage for `kubectl top` through metrics-server.',
      ),
    tenantApi: z
      .object({
        enabled: z
          .boolean()
          .default(false)
          .describe(
            "The tenant API (`tenant.gpucloud.io`): pods' logs and metrics and endpoints' tasks through the Kubernetes API, under RBAC (docs/security.md). Off by default: an APIService whose server is down holds every namespace deletion (docs/design.md §12); when on, run 2 replicas with a PodDisruptionBudget.",
          ),
        port: port(8443, 'Container port of the tenant API (`--tenant-api-port`).'),
        bindAddress: z
          .union([z.ipv4(), z.ipv6()])
          .default('0.0.0.0')
          .describe('Address the tenant API listens on (`--tenant-api-bind-address`).'),
        service: z
          .object({ port: port(443, 'Service port the APIService names.') })
          .strict()
          .describe('The Service without a selector whose one endpoint the leader writes.'),
        certManager: z
          .object({
            enabled: z
              .boolean()
              .default(false)
              .describe(
                'Take the serving certificate from cert-manager (a Certificate, and the CA injected into the APIService). Off: the operator makes one once and keeps it in `<fullname>-tenant-api-tls`.',
              ),
            issuerRef: z
              .object({
                name: z
                  .string()
                  .default('')
                  .describe('The Issuer or ClusterIssuer; required with cert-manager.'),
                kind: z.enum(['Issuer', 'ClusterIssuer']).default('Issuer').describe('Its kind.'),
              })
              .strict()
              .describe('Who signs it.'),
          })
          .strict()
          .describe('The serving certificate.'),
        requestsPerSecond: z
          .number()
          .positive()
          .default(5)
          .describe(
            "Cloud calls per second the tenant API may send per account (`--tenant-api-rps`), out of the account's own budget: keep it well below it.",
          ),
        streamsPerUser: z
          .int()
          .min(1)
          .default(2)
          .describe('Followed logs one user may hold open (`--tenant-api-streams-per-user`).'),
        streamsPerAccount: z
          .int()
          .min(1)
          .default(10)
          .describe('Followed logs open at once per account (`--tenant-api-streams-per-account`).'),
        aggregateToDefaultRoles: z
          .boolean()
          .default(true)
          .describe(
            'ClusterRoles that aggregate into view (read logs, metrics, tasks) and edit (submit tasks); off: grant them yourself.',
          ),
      })
      .strict()
      .describe('The aggregated tenant API.'),
    podDisruptionBudget: z
      .object({
        enabled: z.boolean().default(false).describe('Create a PodDisruptionBudget.'),
        minAvailable: z
          .union([z.int().min(0), z.string().regex(/^\d+%$/), z.literal('')])
          .default('')
          .describe('Minimum available pods; set this or `maxUnavailable`.'),
        maxUnavailable: z
          .union([z.int().min(0), z.string().regex(/^\d+%$/), z.literal('')])
          .default(1)
          .describe('Maximum unavailable pods; ignored when `minAvailable` is set.'),
      })
      .strict()
      .describe('Limits voluntary disruptions (node drains) of the operator.'),
    networkPolicy: z
      .object({
        enabled: z
          .boolean()
          .default(true)
          .describe('Create a NetworkPolicy for the operator pod (enforced only where the CNI supports it).'),
        metricsFrom: passThroughList('Peers allowed to reach the health/metrics port. Empty: any.'),
        callbacksFrom: passThroughList('Peers allowed to reach the callback port. Empty: any.'),
        tenantApiFrom: passThroughList(
          'Peers allowed to reach the tenant API port: the apiserver (its node addresses, or its pods). Empty: any; the API accepts only the front proxy anyway.',
        ),
        kubeletApiFrom: passThroughList(
          "Peers allowed to reach the virtual nodes' kubelet API ports (with virtualNode.tlsSecret): the apiserver (`kubectl logs`) and metrics-server (`kubectl top`). Empty: any; each request is authenticated and reviewed anyway.",
        ),
        apiServer: egressTarget(
          [443, 6443],
          'The Kubernetes API: its address ranges (e.g. the kubernetes Service IP and the control plane nodes, /32 each) and ports. Empty cidrs: any address on those ports.',
        ),
        cloudApi: egressTarget(
          [443],
          'The GPU cloud API: its address ranges and ports. A NetworkPolicy cannot name hosts, so give the CIDRs the API host resolves to. Empty cidrs: any address on those ports.',
        ),
      })
      .strict()
      .describe('Restricts the operator pod to the traffic it needs.'),
    argocd: z
      .object({
        syncWave: z
          .string()
          .regex(/^-?\d+$/)
          .default('-1')
          .describe(
            'Sync wave of the chart objects. Before custom resources (wave 0), so that on deletion the operator outlives them and removes their finalizers.',
          ),
      })
      .strict()
      .describe('Argo CD annotations.'),
  })
  .strict();

export type ChartValues = z.output<typeof valuesSchema>;

/** The chart's values.schema.json: strict, so that a misspelt value fails the install instead of being ignored. */
export function valuesJsonSchema(): Record<string, unknown> {
  return z.toJSONSchema(valuesSchema, { target: 'draft-07', io: 'output' });
}
