import { budgetWeight, type Estimate, type SpendRate } from '../pricing/spend.ts';
import type { Budget, ProviderConfigSpec } from './schema.ts';
import { limitPerHour } from './spend-record.ts';

/*
 * What an account's guardrails and budgets make of resources about to be created, worked out before
 * anything is sent: gpucloud plan shows it. Pure functions over what the caller read (the account's spec,
 * its live GPUs and spend rates, the namespaces' labels), so they are tested on plain values.
 */

/** `allowed`; `refused`: the operator would not create it now; `unknown`: what it needs could not be read. */
export type Outcome = 'allowed' | 'refused' | 'unknown';

/** What one check says of one resource. */
export interface Verdict {
  /** The check: `namespaces`, `gpuTypes`, `maxGpusPerResource`, `maxLiveGpus`, `price`, or `budget <name>`. */
  readonly check: string;
  readonly outcome: Outcome;
  readonly message: string;
}

/** A resource about to be applied, as the checks weigh it. */
export interface PlannedItem {
  readonly namespace: string;
  readonly estimate: Estimate;
  /**
   * What the cloud object this resource already holds (it exists, with a `status.id`) costs and holds now:
   * applying it changes that object instead of adding one. Undefined for a new resource.
   */
  readonly existing?: { readonly perHour: number; readonly gpus: number } | undefined;
}

/** What the checks read of an account: the namespaces that may use it, and its guardrails. */
export type AccountLimits = Pick<ProviderConfigSpec, 'namespaces' | 'guardrails'>;

/** Every namespace, no guardrail: the operator's own account (its flags), used when no ProviderConfig is named default. */
export const UNLIMITED: AccountLimits = { namespaces: { selector: {} } };

/** What the caller could read of the account. Undefined fields are unknown; `problem` says why. */
export interface AccountView {
  /** The ProviderConfig's spec; undefined when it could not be read (then guardrails and budgets are unknown). */
  readonly spec?: AccountLimits | undefined;
  /** Why `spec` is missing, for a user. */
  readonly problem?: string | undefined;
  /** GPUs the account's objects hold now, as the live-GPU limit counts them. */
  readonly liveGpus?: number | undefined;
  /** Each budget's spend rate now, by budget name, or why it could not be read. */
  readonly budgetSpend: ReadonlyMap<string, SpendRate | { readonly unknown: string }>;
  /** A namespace's labels; undefined when they could not be read. */
  labelsOf(namespace: string): Readonly<Record<string, string>> | undefined;
  /** What the budget has spent this month, as the operator recorded it (0 when it has not). */
  monthToDate(budget: string): number;
  /** Epoch ms: the month's hours left count from here. */
  readonly now: number;
}

/** A budget's limit per hour, as the operator checks it (spend-record.ts). */
export type HourlyLimit = ReturnType<typeof limitPerHour>;

/** A set of namespaces as the ProviderConfig names them: by name, or by label. */
type NamespaceSet = NonNullable<Budget['namespaces']>;

/**
 * Whether `namespace` is in the set: listed by name, or its labels match the selector (an empty selector
 * matches every namespace). Undefined when only its labels could tell and they are unknown.
 */
export function inNamespaces(
  set: NamespaceSet,
  namespace: string,
  labels: Readonly<Record<string, string>> | undefined,
): boolean | undefined {
  if (set.names?.includes(namespace)) return true;
  if (set.selector === undefined) return false;
  const wanted = Object.entries(set.selector.matchLabels ?? {});
  if (wanted.length === 0) return true;
  if (labels === undefined) return undefined;
  return wanted.every(([key, value]) => labels[key] === value);
}

/** Whether `budget` covers a resource of `namespace`: every one when it names no namespaces. */
export function budgetCovers(
  budget: Budget,
  namespace: string,
  labels: Readonly<Record<string, string>> | undefined,
): boolean | undefined {
  return budget.namespaces === undefined ? true : inNamespaces(budget.namespaces, namespace, labels);
}

/** What one budget makes of the plan: its limit, the spend now, what the plan adds, and the outcome. */
export interface BudgetVerdict {
  readonly budget: string;
  /** `account`, or the namespaces it covers, in words. */
  readonly covers: string;
  readonly limit: HourlyLimit;
  /** Spend per hour now of what it covers; undefined when unknown. */
  readonly nowPerHour?: number | undefined;
  /** What the plan's resources it covers add per hour. */
  readonly addingPerHour: number;
  readonly outcome: Outcome;
  readonly message: string;
}

/** The verdicts on each planned item (in order), and on each budget of the account. */
export interface AccountVerdicts {
  readonly items: ReadonlyArray<readonly Verdict[]>;
  readonly budgets: readonly BudgetVerdict[];
}

const money = (n: number) => n.toFixed(4);

/**
 * Judges `items`, in order, against the account: its namespaces, GPU types, GPUs per resource, live GPUs
 * and budgets, each as the operator checks it before a create. The items are taken as applied together: a
 * limit counts the items before each one, so the one that would go over is the one refused. An item that
 * holds a live object already adds only what it adds beyond it. What the caller could not read is
 * `unknown`, with why.
 */
export function judgeAccount(items: readonly PlannedItem[], account: AccountView): AccountVerdicts {
  const { spec } = account;
  if (spec === undefined) {
    const why = account.problem ?? 'its ProviderConfig could not be read';
    return {
      items: items.map((item) => [
        ...priceVerdict(item),
        { check: 'guardrails', outcome: 'unknown', message: `guardrails and budgets unknown: ${why}` },
      ]),
      budgets: [],
    };
  }
  const guardrails = spec.guardrails;
  let liveGpus = account.liveGpus;
  const budgets = (guardrails?.budgets ?? []).map((budget) => ({
    budget,
    limit: limitPerHour(budget, account.monthToDate(budget.name), account.now),
    spend: account.budgetSpend.get(budget.name),
    adding: 0,
    refused: 0,
    unsure: 0,
  }));
  const verdicts = items.map((item) => {
    const out: Verdict[] = [...priceVerdict(item)];
    const labels = account.labelsOf(item.namespace);
    const allowed = inNamespaces(spec.namespaces, item.namespace, labels);
    out.push(
      allowed === undefined
        ? {
            check: 'namespaces',
            outcome: 'unknown',
            message: `the labels of namespace ${item.namespace} could not be read`,
          }
        : allowed
          ? {
              check: 'namespaces',
              outcome: 'allowed',
              message: `namespace ${item.namespace} may use the account`,
            }
          : {
              check: 'namespaces',
              outcome: 'refused',
              message: `namespace ${item.namespace} may not use the account: it is not among its namespaces`,
            },
    );
    const { gpus, price } = item.estimate;
    if (gpus !== undefined) {
      const forbidden =
        guardrails?.gpuTypes && gpus.types.find((type) => !guardrails.gpuTypes?.includes(type));
      if (forbidden !== undefined) {
        out.push({ check: 'gpuTypes', outcome: 'refused', message: `GPU type ${forbidden} is not allowed` });
      }
      const perResource = guardrails?.maxGpusPerResource;
      if (perResource !== undefined && gpus.count > perResource) {
        out.push({
          check: 'maxGpusPerResource',
          outcome: 'refused',
          message: `${gpus.count} GPUs exceed its limit of ${perResource} per resource`,
        });
      }
      const limit = guardrails?.maxLiveGpus;
      const adding = gpus.count - (item.existing?.gpus ?? 0);
      if (limit !== undefined && adding > 0) {
        if (liveGpus === undefined) {
          out.push({
            check: 'maxLiveGpus',
            outcome: 'unknown',
            message: "the account's live GPUs could not be counted",
          });
        } else if (liveGpus + adding > limit) {
          out.push({
            check: 'maxLiveGpus',
            outcome: 'refused',
            message: `${adding} more GPUs would make ${liveGpus + adding} live, over its limit of ${limit}`,
          });
        } else {
          liveGpus += adding;
          out.push({
            check: 'maxLiveGpus',
            outcome: 'allowed',
            message: `${liveGpus} of ${limit} GPUs live with it`,
          });
        }
      }
    }
    const addingPerHour = price.priced ? Math.max(0, budgetWeight(price) - (item.existing?.perHour ?? 0)) : 0;
    for (const entry of budgets) {
      const covered = budgetCovers(entry.budget, item.namespace, labels);
      const check = `budget ${entry.budget.name}`;
      if (covered === false) continue;
      if (covered === undefined) {
        entry.unsure++;
        out.push({
          check,
          outcome: 'unknown',
          message: `the labels of namespace ${item.namespace} could not be read`,
        });
        continue;
      }
      if (entry.spend === undefined || 'unknown' in entry.spend) {
        entry.unsure++;
        out.push({
          check,
          outcome: 'unknown',
          message: entry.spend?.unknown ?? 'its spend rate could not be read',
        });
        continue;
      }
      if (addingPerHour === 0) continue;
      const after = entry.spend.perHour + entry.adding + addingPerHour;
      if (after > entry.limit.perHour) {
        entry.refused++;
        out.push({
          check,
          outcome: 'refused',
          message: `${money(addingPerHour)} USD/h more would make ${money(after)} USD/h, over its ${limitText(entry.limit)}`,
        });
      } else {
        entry.adding += addingPerHour;
        out.push({
          check,
          outcome: 'allowed',
          message: `${money(after)} of ${money(entry.limit.perHour)} USD/h with it`,
        });
      }
    }
    return out;
  });
  return {
    items: verdicts,
    budgets: budgets.map(({ budget, limit, spend, adding, refused, unsure }) => {
      const covers = budget.namespaces === undefined ? 'account' : namespacesText(budget.namespaces);
      if (spend === undefined || 'unknown' in spend) {
        const why = spend?.unknown ?? 'its spend rate could not be read';
        return {
          budget: budget.name,
          covers,
          limit,
          addingPerHour: adding,
          outcome: 'unknown',
          message: why,
        };
      }
      const lowerBound =
        spend.unpriced.length > 0 ? ` (at least: ${spend.unpriced.length} objects have no price)` : '';
      const now = `${money(spend.perHour)} USD/h now${lowerBound}`;
      const outcome: Outcome = refused > 0 ? 'refused' : unsure > 0 ? 'unknown' : 'allowed';
      const after = spend.perHour + adding;
      const message =
        refused > 0
          ? `${now}; it would refuse ${refused} of the plan's resources: over its ${limitText(limit)}`
          : after > limit.perHour
            ? `${now}, over its ${limitText(limit)} already; the plan adds nothing to it`
            : `${now}, ${money(after)} USD/h with the plan, within its ${limitText(limit)}`;
      return {
        budget: budget.name,
        covers,
        limit,
        nowPerHour: spend.perHour,
        addingPerHour: adding,
        outcome,
        message,
      };
    }),
  };
}

/** An item with no price: refused when no offer or VM type fits (the cloud would refuse it), else unknown. */
function priceVerdict({ estimate: { price } }: PlannedItem): Verdict[] {
  if (price.priced) return [];
  return [
    { check: 'price', outcome: price.reason === 'NotQuoted' ? 'unknown' : 'refused', message: price.message },
  ];
}

function limitText(limit: HourlyLimit): string {
  return limit.by === 'maxSpendPerHour'
    ? `maxSpendPerHour of ${money(limit.perHour)} USD/h`
    : `maxSpendPerMonth (what it leaves this month: ${money(limit.perHour)} USD/h for the hours left)`;
}

function namespacesText(set: NamespaceSet): string {
  const parts = [
    ...(set.names ?? []),
    ...(set.selector ? [`labels ${JSON.stringify(set.selector.matchLabels ?? {})}`] : []),
  ];
  return parts.join(', ');
}
