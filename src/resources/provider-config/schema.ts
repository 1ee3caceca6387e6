import { z } from 'zod';
import { listMap, withRules } from '../../kube/schema-meta.ts';
import { conditionSchema } from '../../managed/core/status-schema.ts';
import { defineKind } from '../common/kind.ts';
import { cloudIdSchema, dnsSubdomainSchema, gpuTypeSchema } from '../common/schema.ts';
import { spendRecordSchema } from './spend-record.ts';

const KIND = 'ProviderConfig';

const labelSelectorSchema = z
  .object({
    matchLabels: z
      .record(z.string(), z.string())
      .optional()
      .describe('Labels a namespace must carry, all of them.'),
  })
  .describe('Namespaces by label; an empty selector matches every namespace.');

const budgetSchema = withRules(
  z
    .object({
      name: z
        .string()
        .min(1)
        .max(63)
        .regex(/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/, {
          message:
            'must be a DNS label: lower-case letters, digits and "-", starting and ending alphanumeric',
        })
        .describe('Name of the budget, unique in the list: what refusals and gpucloud plan call it.'),
      namespaces: withRules(
        z.object({
          names: z.array(dnsSubdomainSchema).max(1000).optional().describe('Namespaces by name.'),
          selector: labelSelectorSchema.optional(),
        }),
        [
          {
            rule: 'has(self.names) || has(self.selector)',
            message:
              'namespaces needs names or a selector (an empty selector covers every namespace); leave it out to cover the whole account',
          },
        ],
      )
        .optional()
        .describe(
          'The namespaces whose resources the budget covers: listed by name, or matched by label (either ' +
            'matching covers). When unset, the budget covers the whole account: every object its lists ' +
            'show, managed by a resource or not.',
        ),
      maxSpendPerHour: z
        .number()
        .min(0)
        .max(1_000_000)
        .optional()
        .describe(
          'Most US dollars per hour the covered objects may cost at once: the hourly prices of those that ' +
            'hold GPUs now (the objects maxLiveGpus counts), plus what a create, resume, start or scale-up ' +
            'would add.',
        ),
      maxSpendPerMonth: z
        .number()
        .min(0)
        .max(1_000_000_000)
        .optional()
        .describe(
          'Most US dollars per calendar month (UTC). The operator counts the month to date (status.spend, ' +
            'integrated from the spend rate and checkpointed) and allows per hour what the month leaves, ' +
            'spread over its hours left: at the first instant of a month, maxSpendPerMonth over its hours.',
        ),
      onExceeded: z
        .enum(['Refuse', 'PausePods'])
        .optional()
        .describe(
          'What the operator does when what the budget covers costs more than it allows (a monthly limit ' +
            'spent faster than planned, a limit lowered, objects made outside the cluster): Refuse (the ' +
            "default) refuses every change that adds spend; PausePods also pauses, through the operator's " +
            'pause (status.pausedBy, reason BudgetExceeded), just enough of the GpuPods that allow it ' +
            '(spec.pauseOnBudget: true) to come back within, the idlest first.',
        ),
    })
    .describe(
      'A limit in US dollars on what the objects it covers may cost per hour. gpucloud plan says what ' +
        'each budget makes of a set of manifests, before they are applied.',
    ),
  [
    {
      rule: 'has(self.maxSpendPerHour) || has(self.maxSpendPerMonth)',
      message: 'a budget needs maxSpendPerHour, maxSpendPerMonth or both',
    },
  ],
);

export type Budget = z.output<typeof budgetSchema>;

const virtualNodeSchema = z
  .object({
    enabled: z
      .boolean()
      .describe(
        'Register the node (gpucloud-<name>) and keep it alive while true; false deregisters it (deletes it).',
      ),
    maxPods: z
      .int()
      .min(1)
      .max(10_000)
      .optional()
      .describe('Most Pods the node takes at once (its pods capacity); 110, as a kubelet, when unset.'),
  })
  .describe('The virtual node of this account.');

export type VirtualNodeSpec = z.output<typeof virtualNodeSchema>;

export const ProviderConfigSpecSchema = withRules(
  z
    .object({
      apiUrl: withRules(z.url({ protocol: /^https?$/ }).max(2048), [
        { rule: 'self == oldSelf', message: 'apiUrl is immutable: create another ProviderConfig' },
      ]).describe(
        'Base URL of the GPU cloud API, e.g. https://api.example.com. Immutable: claims on cloud objects are exclusive per API URL.',
      ),
      credentials: z
        .object({
          secretRef: z
            .object({
              namespace: dnsSubdomainSchema.describe('Namespace of the Secret.'),
              name: dnsSubdomainSchema.describe('Name of the Secret.'),
              key: z.string().min(1).max(253).describe('Key in the Secret that holds the API key.'),
            })
            .describe(
              'The Secret holding the API key. The operator reads it through the apiserver, so a rotated key is picked up within seconds.',
            ),
        })
        .describe('How the operator authenticates to the cloud for this account.'),
      requestsPerSecond: z
        .number()
        .positive()
        .max(10_000)
        .optional()
        .describe('Most API requests per second to this account; the operator flag --api-rps when unset.'),
      pollIntervalSeconds: z
        .int()
        .min(1)
        .max(3600)
        .optional()
        .describe('How often each kind of object is listed; the operator flag --poll-interval when unset.'),
      namespaces: z
        .object({
          names: z.array(dnsSubdomainSchema).max(1000).optional().describe('Namespaces allowed by name.'),
          selector: labelSelectorSchema.optional(),
        })
        .describe(
          'The namespaces whose resources may use this account: listed by name, or matched by label (either matching allows).',
        ),
      adoption: z
        .enum(['Allowed', 'Denied'])
        .optional()
        .describe(
          'Whether resources may adopt existing cloud objects by id. Unset: Allowed when exactly one namespace is listed and no selector is set, else Denied.',
        ),
      allowedContainerRegistryAuthIds: z
        .array(cloudIdSchema)
        .max(1000)
        .optional()
        .describe('containerRegistryAuthId values resources may use; any when unset, none when empty.'),
      allowedCredentialIds: z
        .array(cloudIdSchema)
        .max(1000)
        .optional()
        .describe('credentialId values resources may use; any when unset, none when empty.'),
      guardrails: z
        .object({
          gpuTypes: z.array(gpuTypeSchema).max(256).optional().describe('GPU types resources may ask for.'),
          maxGpusPerResource: z
            .int()
            .min(0)
            .optional()
            .describe('Most GPUs one resource may hold (an endpoint: workers × GPUs per worker).'),
          maxLiveGpus: z
            .int()
            .min(0)
            .optional()
            .describe(
              'Most GPUs live at once on the account, counting every object of every kind its lists show, managed or not: GPU pods not paused or terminated, VMs not stopped or terminated, endpoint workers (asked for or running) of endpoints not stopped. A create counts what the cloud runs (a pod created paused runs until it is paused); concurrent creates and resumes reserve their GPUs, so a burst never goes over.',
            ),
          budgets: listMap(z.array(budgetSchema).max(32), ['name'])
            .optional()
            .describe(
              'Limits in US dollars, on the whole account (a budget without namespaces) or on a set of namespaces: ' +
                "every budget that covers a resource must allow what it adds. A price is the object's own where it " +
                "carries one (a pod read with a get, an endpoint), else today's GPU offer (a pod as lists show " +
                'it) or VM type (a VM); docs/spend.md says how exact each is.',
            ),
        })
        .optional()
        .describe('Limits on spend: a create or scale beyond one is refused and not sent.'),
      virtualNode: virtualNodeSchema
        .optional()
        .describe(
          'A virtual Node backed by this account, so that plain Pods that tolerate its taint run on the GPU ' +
            'cloud; off when unset. docs/virtual-node.md says what it is and how to target it.',
        ),
    })
    .describe('A GPU cloud account: where its API is, its key, and what the namespaces that use it may do.'),
  [
    {
      rule: 'has(self.namespaces.names) || has(self.namespaces.selector)',
      message: 'namespaces needs names or a selector (an empty selector allows every namespace)',
      fieldPath: '.namespaces',
    },
  ],
);

export const ProviderConfigStatusSchema = z
  .object({
    conditions: listMap(z.array(conditionSchema).max(16), ['type'])
      .optional()
      .describe(
        'Ready: the API key was read and the cloud accepted it. VirtualNode (False, reason VirtualNodesDisabled): spec.virtualNode asks for a node, and the operator runs without virtual nodes (chart value virtualNode.enabled, flag --virtual-nodes).',
      ),
    users: z.int().min(0).optional().describe('Managed resources that use this account now.'),
    spend: spendRecordSchema.optional(),
    observedGeneration: z.int().min(0).optional().describe('metadata.generation the status describes.'),
  })
  .describe('Observed state of the account.');

export type ProviderConfigSpec = z.output<typeof ProviderConfigSpecSchema>;

export const providerConfigKind = defineKind({
  kind: KIND,
  plural: 'providerconfigs',
  shortNames: ['gpc'],
  scope: 'Cluster',
  description:
    'A GPU cloud account that namespaced resources use through spec.providerConfigRef: its API URL and key, the namespaces allowed to use it, and guardrails on spend.',
  spec: ProviderConfigSpecSchema,
  status: ProviderConfigStatusSchema,
  columns: [
    { name: 'API URL', type: 'string', jsonPath: '.spec.apiUrl', description: 'Base URL of the API.' },
    { name: 'Users', type: 'integer', jsonPath: '.status.users', description: 'Resources that use it.' },
    {
      name: 'Spend/h',
      type: 'number',
      jsonPath: '.status.spend.perHour',
      description: 'Dollars per hour its live objects cost now.',
    },
    {
      name: 'Month To Date',
      type: 'number',
      jsonPath: '.status.spend.monthToDate',
      description: 'Dollars spent this month (UTC), as counted.',
    },
  ],
  phaseColumn: false,
});
