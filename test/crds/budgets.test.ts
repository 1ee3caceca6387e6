import assert from 'node:assert/strict';
import { before, describe, test } from 'node:test';
import { API_VERSION } from '../../src/resources/kinds.ts';
import { useControlPlane } from '../support/control-plane.ts';
import { installCrds } from '../support/crds.ts';
import { CustomResources, rejection } from './cluster.ts';
import type { Manifest } from './examples.ts';

// The budgets of a ProviderConfig's guardrails, admitted by a real apiserver: what it takes, and what it
// refuses with which message.

const controlPlane = useControlPlane();
let resources: CustomResources;

const config = (budgets: unknown[]): Manifest => ({
  apiVersion: API_VERSION,
  kind: 'ProviderConfig',
  metadata: { name: 'budgeted' },
  spec: {
    apiUrl: 'https://api.example.com',
    credentials: { secretRef: { namespace: 'accounts', name: 'key', key: 'api-key' } },
    namespaces: { names: ['ml'] },
    guardrails: { budgets },
  },
});

describe('ProviderConfig budgets at admission', () => {
  before(async () => {
    const { kubeConfig } = controlPlane();
    await installCrds(controlPlane().connection);
    resources = new CustomResources(kubeConfig, '');
  });

  test('an account budget, a namespaced one by name and one by label are accepted', async () => {
    await resources.create(
      config([
        { name: 'account', maxSpendPerHour: 50, maxSpendPerMonth: 20_000 },
        { name: 'ml', namespaces: { names: ['ml'] }, maxSpendPerMonth: 3000 },
        { name: 'gold', namespaces: { selector: { matchLabels: { tier: 'gold' } } }, maxSpendPerHour: 0 },
      ]),
      { dryRun: true },
    );
  });

  const refused: Array<[string, unknown[], RegExp]> = [
    [
      'a budget without a limit',
      [{ name: 'none' }],
      /a budget needs maxSpendPerHour, maxSpendPerMonth or both/,
    ],
    [
      'two budgets of one name',
      [
        { name: 'same', maxSpendPerHour: 1 },
        { name: 'same', maxSpendPerHour: 2 },
      ],
      /budgets\[1\]: Duplicate value: \{"name":"same"\}/,
    ],
    [
      'namespaces with neither names nor a selector',
      [{ name: 'empty', namespaces: {}, maxSpendPerHour: 1 }],
      /namespaces needs names or a selector .*leave it out to cover the whole account/,
    ],
    ['a negative limit', [{ name: 'neg', maxSpendPerHour: -1 }], /maxSpendPerHour: Invalid value: -1/],
    [
      'a name that is no DNS label',
      [{ name: 'Team A', maxSpendPerHour: 1 }],
      /name: Invalid value: "Team A"/,
    ],
    [
      'more than 32 budgets',
      Array.from({ length: 33 }, (_, i) => ({ name: `b${i}`, maxSpendPerHour: 1 })),
      /must have at most 32 items/,
    ],
  ];
  for (const [what, budgets, message] of refused) {
    test(`refuses ${what}`, async () => {
      const { code, message: said } = await rejection(resources.create(config(budgets), { dryRun: true }));
      assert.equal(code, 422);
      assert.match(said, message);
    });
  }
});
