import { z } from 'zod';
import { CloudApiError } from '../../api/errors.ts';
import type { Result } from '../../controller/controller.ts';
import type { Manager } from '../../controller/manager.ts';
import { beyondStatus } from '../../controller/predicates.ts';
import { objectsOf } from '../../controller/source.ts';
import { KubeApiError } from '../../kube/client.ts';
import { type ObjectKey, objectMetaSchema } from '../../kube/object.ts';
import { namespaces, objectPath, type ResourceType } from '../../kube/resource-type.ts';
import { readSecret } from '../../kube/secrets.ts';
import type { Clock } from '../../lib/clock.ts';
import type { Logger } from '../../lib/logger.ts';
import {
  ACCOUNT_RECHECK_MS,
  type AccountRegistry,
  type ClientSettings,
  type Entry,
  makeAccount,
  RotatingKey,
} from '../../managed/accounts/account-registry.ts';
import { type AccountPolicy, budgetScope } from '../../managed/accounts/accounts.ts';
import { accountOf } from '../../managed/core/account-ref.ts';
import { type ConditionInput, mergeConditions } from '../../managed/core/conditions.ts';
import { ReconcileError } from '../../managed/core/errors.ts';
import type { Condition } from '../../managed/core/status-schema.ts';
import { resourceOf } from '../common/kind.ts';
import { keptConditions, virtualNodeCondition } from './conditions.ts';
import { allowsNamespace } from './namespaces.ts';
import { type ProviderConfigSpec, ProviderConfigSpecSchema, providerConfigKind } from './schema.ts';
import { registerSpendMetrics } from './spend-metrics.ts';
import { advance, limitPerHour, type SpendRecord, spendRecordSchema, worthWriting } from './spend-record.ts';
import { budgetCovers } from './verdicts.ts';

/** Held while any managed resource uses the account, so deleting it never strands them. */
export const CONFIG_FINALIZER = 'gpucloud.io/provider-config-in-use';

/** How soon a config is read again: a rotated key Secret is picked up within this. */
const REREAD_MS = 5_000;
/** The spend record is written at least this often while nothing else about it changes. */
const SPEND_CHECKPOINT_MS = 60_000;

const providerConfigs = resourceOf(providerConfigKind);

const storedConfig = z.looseObject({
  metadata: objectMetaSchema,
  spec: z.unknown(),
  status: z.looseObject({ conditions: z.array(z.looseObject({})).optional() }).optional(),
});
type StoredConfig = z.output<typeof storedConfig>;

export interface ProviderConfigOptions {
  accounts: AccountRegistry;
  clients: ClientSettings;
  /** The managed kinds whose resources name accounts, to count each account's users. */
  managed: readonly ResourceType[];
  /** The namespaces the managed kinds are watched in; all when empty. */
  namespaces: readonly string[];
  /** Whether the operator runs virtual nodes (--virtual-nodes): a config asking for one is told when not. */
  virtualNodes: boolean;
  clock: Clock;
  log: Logger;
}

/**
 * Keeps the account registry in step with the cluster's ProviderConfigs: reads each key Secret through
 * the apiserver (again every few seconds, so a rotation needs no restart), proves the key with one call
 * the API requires it for, reports `Ready` and the users on the config, and holds a finalizer while any
 * resource uses the account.
 */
export function addProviderConfigController(manager: Manager, options: ProviderConfigOptions): void {
  const { accounts, log } = options;
  const informer = manager.informer({ resource: providerConfigs });
  const namespaceInformer = manager.informer({ resource: namespaces });
  const watched = options.namespaces.length > 0 ? options.namespaces : [''];
  const managed = options.managed.flatMap((resource) =>
    watched.map((namespace) => manager.informer({ resource, namespace })),
  );
  /** The key each account last proved, so a proof costs one call per key, not one per read. */
  const proven = new Map<string, string>();

  /**
   * The resources that use account `name`: those of namespaces its policy allows. A resource of another
   * namespace that merely names it is refused and never acts in it, so it may not hold the config.
   */
  const usersOf = (name: string, policy: AccountPolicy | undefined): number => {
    let users = 0;
    for (const kind of managed) {
      for (const obj of kind.store.values()) {
        const namespace = obj.metadata.namespace ?? '';
        if (accountOf(obj.spec) === name && (policy?.allowsNamespace(namespace) ?? true)) users++;
      }
    }
    return users;
  };

  /** Each account's spend record, as last written to its status (or carried on from it). */
  const spendRecords = new Map<string, SpendRecord>();
  registerSpendMetrics(manager.registry, spendRecords);
  const monthToDate = (config: string, budget: string): number =>
    spendRecords.get(config)?.budgets?.find((entry) => entry.name === budget)?.monthToDate ?? 0;

  const policyOf = (name: string, spec: ProviderConfigSpec): AccountPolicy => {
    const names = spec.namespaces.names ?? [];
    const ids = (values: readonly number[] | undefined) => values && new Set(values.map(String));
    return {
      allowsNamespace: (namespace) =>
        allowsNamespace(
          spec.namespaces,
          namespace,
          namespaceInformer.store.get({ namespace: '', name: namespace })?.metadata.labels ?? {},
        ),
      adoption: spec.adoption
        ? spec.adoption === 'Allowed'
        : new Set(names).size === 1 && spec.namespaces.selector === undefined,
      registryAuthIds: ids(spec.allowedContainerRegistryAuthIds),
      credentialIds: ids(spec.allowedCredentialIds),
      gpuTypes: spec.guardrails?.gpuTypes && new Set(spec.guardrails.gpuTypes),
      maxGpusPerResource: spec.guardrails?.maxGpusPerResource,
      maxLiveGpus: spec.guardrails?.maxLiveGpus,
      budgets: spec.guardrails?.budgets?.map((budget) => ({
        name: budget.name,
        limit: () => limitPerHour(budget, monthToDate(name, budget.name), options.clock.now()),
        accountWide: budget.namespaces === undefined,
        pausesPods: budget.onExceeded === 'PausePods',
        // A namespace whose labels are not known yet is covered: a budget errs on the side of counting.
        covers: (namespace: string) =>
          budgetCovers(
            budget,
            namespace,
            namespaceInformer.store.get({ namespace: '', name: namespace })?.metadata.labels ?? {},
          ) ?? true,
      })),
    };
  };

  const readKey = async (spec: ProviderConfigSpec): Promise<string> => {
    const { namespace, name, key } = spec.credentials.secretRef;
    const value = (await readSecret(manager.client, namespace, name))?.[key];
    if (value === undefined || value.trim() === '') {
      throw new ReconcileError(
        'SecretNotFound',
        `the key Secret ${namespace}/${name} does not exist or has no key "${key}"`,
        { terminal: false },
      );
    }
    return value.trim();
  };

  /** The registry entry for `name` as its spec now says: kept while the spec is unchanged, so its cache and client live on. */
  const entryFor = (name: string, generation: number, spec: ProviderConfigSpec, key: string): Entry => {
    const known = accounts.get(name);
    if (known && generations.get(name) === generation) {
      const before = known.key.current();
      known.key.set(key);
      if (known.key.current() !== before) accounts.changed(name);
      return known;
    }
    const rotating = new RotatingKey(key, () => readKey(spec));
    const account = makeAccount(
      name,
      spec.apiUrl,
      rotating,
      policyOf(name, spec),
      options.clients,
      {
        requestsPerSecond: spec.requestsPerSecond,
        pollIntervalMs: spec.pollIntervalSeconds === undefined ? undefined : spec.pollIntervalSeconds * 1000,
      },
      accounts.usageFor(spec.apiUrl, key),
    );
    const entry: Entry = { account, key: rotating, problem: notReady('the API key is not proven yet') };
    accounts.set(name, entry);
    generations.set(name, generation);
    proven.delete(name);
    return entry;
  };
  const generations = new Map<string, number>();

  const prove = async (name: string, entry: Entry): Promise<ConditionInput> => {
    const key = entry.key.current();
    if (proven.get(name) === key) return ready();
    try {
      await entry.account.client.pods.searchGpus({ size: 1 });
      proven.set(name, key);
      const wasRefusing = entry.problem !== undefined;
      entry.problem = undefined;
      if (wasRefusing) accounts.changed(name);
      return ready();
    } catch (error) {
      const rejected =
        error instanceof CloudApiError && (error.httpStatus === 401 || error.httpStatus === 403);
      const message = rejected
        ? `the cloud refused the API key (HTTP ${error.httpStatus}); put a valid key in the Secret`
        : `the cloud could not be asked to prove the key: ${error instanceof Error ? error.message : String(error)}`;
      entry.problem = notReady(message);
      return {
        type: 'Ready',
        status: 'False',
        reason: rejected ? 'KeyRejected' : 'CloudUnreachable',
        message,
      };
    }
  };

  const writeStatus = async (
    config: StoredConfig,
    updates: readonly ConditionInput[],
    users: number,
    spend?: SpendRecord,
  ): Promise<void> => {
    const current = configStatus.safeParse(config.status ?? {});
    const before = current.success ? current.data : {};
    const conditions = mergeConditions(
      keptConditions(before.conditions, updates),
      updates,
      config.metadata.generation ?? 0,
      new Date(options.clock.now()),
    );
    const next = {
      conditions,
      users,
      observedGeneration: config.metadata.generation ?? 0,
      spend: spend ?? before.spend,
    };
    if (JSON.stringify(stripTimes(before)) === JSON.stringify(stripTimes(next))) return;
    await manager.client.request(z.unknown(), {
      method: 'PATCH',
      path: `${objectPath(providerConfigs, keyOf(config))}/status`,
      // On the version read only: the month-to-date spend is money, never carried forward from a stale copy.
      body: { metadata: { resourceVersion: config.metadata.resourceVersion }, status: next },
    });
  };

  const setFinalizers = (config: StoredConfig, finalizers: string[]) =>
    manager.client.request(z.unknown(), {
      method: 'PATCH',
      path: objectPath(providerConfigs, keyOf(config)),
      body: { metadata: { finalizers, resourceVersion: config.metadata.resourceVersion } },
    });

  const reconcile = async (key: ObjectKey): Promise<Result> => {
    const raw = informer.store.get(key);
    if (!raw) {
      accounts.delete(key.name);
      generations.delete(key.name);
      spendRecords.delete(key.name);
      proven.delete(key.name);
      return {};
    }
    const config = storedConfig.parse(raw);
    const finalizers = config.metadata.finalizers ?? [];
    const parsed = ProviderConfigSpecSchema.safeParse(config.spec);
    const users = usersOf(key.name, parsed.success ? policyOf(key.name, parsed.data) : undefined);
    if (config.metadata.deletionTimestamp) {
      if (users > 0) {
        const message = `${users} resources still use this account; delete them or point them elsewhere first`;
        await writeStatus(config, [{ type: 'Ready', status: 'False', reason: 'InUse', message }], users);
        return { requeueAfterMs: REREAD_MS };
      }
      accounts.delete(key.name);
      generations.delete(key.name);
      spendRecords.delete(key.name);
      if (finalizers.includes(CONFIG_FINALIZER)) {
        await setFinalizers(
          config,
          finalizers.filter((finalizer) => finalizer !== CONFIG_FINALIZER),
        );
      }
      return {};
    }
    if (!finalizers.includes(CONFIG_FINALIZER)) {
      await setFinalizers(config, [...finalizers, CONFIG_FINALIZER]);
      return {};
    }
    if (!parsed.success) {
      // Admission applies the same schema, so only a config stored before an upgrade can get here.
      const message = `the spec does not fit the schema: ${z.prettifyError(parsed.error)}`;
      const known = accounts.get(key.name);
      if (known) known.problem = notReady(message);
      await writeStatus(config, [{ type: 'Ready', status: 'False', reason: 'InvalidSpec', message }], users);
      return {};
    }
    let condition: ConditionInput;
    try {
      const apiKey = await readKey(parsed.data);
      const entry = entryFor(key.name, config.metadata.generation ?? 0, parsed.data, apiKey);
      condition = await prove(key.name, entry);
    } catch (error) {
      if (!(error instanceof ReconcileError)) throw error;
      const known = accounts.get(key.name);
      if (known) known.problem = notReady(error.message);
      condition = { type: 'Ready', status: 'False', reason: error.reason, message: error.message };
    }
    const virtualNode = virtualNodeCondition(parsed.data, options.virtualNodes);
    const conditions = virtualNode ? [condition, virtualNode] : [condition];
    await writeStatus(config, conditions, users, spendNow(config, parsed.data));
    return { requeueAfterMs: REREAD_MS };
  };

  /**
   * The account's spend record carried forward to now, when it is worth writing; undefined while the
   * account's live objects are not all priced (the next reconcile counts the gap), or nothing changed.
   */
  const spendNow = (config: StoredConfig, spec: ProviderConfigSpec): SpendRecord | undefined => {
    const name = config.metadata.name;
    const { usage } = accounts.get(name)?.account ?? {};
    if (!usage) return undefined;
    const stored = configStatus.safeParse(config.status ?? {});
    const before = spendRecords.get(name) ?? (stored.success ? stored.data.spend : undefined);
    const perHour = usage.spendPerHour(() => true);
    const policy = accounts.get(name)?.account.policy;
    const budgets = (spec.guardrails?.budgets ?? []).map((budget) => {
      const limits = policy?.budgets?.find((limit) => limit.name === budget.name);
      const covered = limits ? budgetScope(limits) : () => false;
      return { budget, perHour: usage.spendPerHour(covered) };
    });
    if (perHour === undefined || budgets.some(({ perHour: rate }) => rate === undefined)) return undefined;
    const now = options.clock.now();
    const next = advance(
      before,
      now,
      perHour,
      budgets.map(({ budget, perHour: rate }) => ({
        name: budget.name,
        perHour: rate ?? 0,
        limit: (spent: number) => limitPerHour(budget, spent, now).perHour,
      })),
    );
    if (before !== undefined && !worthWriting(before, next, SPEND_CHECKPOINT_MS)) return undefined;
    spendRecords.set(name, next);
    return next;
  };

  manager.addController({
    name: 'providerconfig',
    // Not its own status writes: they would wake it again at once while its counts move; it rereads anyway.
    sources: [objectsOf(informer, { updatePredicate: beyondStatus() })],
    reconcile: async (key) => {
      try {
        return await reconcile(key);
      } catch (error) {
        if (error instanceof KubeApiError && error.status === 409) return { requeue: true };
        log.warn({ providerConfig: key.name, err: error }, 'provider config reconcile failed; retrying');
        throw error;
      }
    },
  });
}

const configStatus = z.looseObject({
  conditions: z.array(z.custom<Condition>((value) => typeof value === 'object' && value !== null)).optional(),
  users: z.number().optional(),
  observedGeneration: z.number().optional(),
  spend: spendRecordSchema.optional().catch(undefined),
});

function ready(): ConditionInput {
  return { type: 'Ready', status: 'True', reason: 'KeyAccepted', message: 'the cloud accepted the API key' };
}

function notReady(message: string): ReconcileError {
  return new ReconcileError('ProviderConfigNotReady', `provider config not ready: ${message}`, {
    terminal: false,
    retryAfterMs: ACCOUNT_RECHECK_MS,
  });
}

function keyOf(config: { metadata: { name: string } }): ObjectKey {
  return { namespace: '', name: config.metadata.name };
}

function stripTimes(status: { conditions?: readonly object[] | undefined }): unknown {
  return {
    ...status,
    conditions: status.conditions?.map((condition) => ({ ...condition, lastTransitionTime: undefined })),
  };
}
