import assert from 'node:assert/strict';
import { test } from 'node:test';
import { CRD_DIR } from '../../src/console/plan-admission.ts';
import { compiledRules, STANDARD_FUNCTIONS } from '../../src/kube/admission/cel-rules.ts';
import { type CustomKind, loadCustomKinds, type SchemaProps } from '../../src/kube/admission/crd.ts';
import { kinds } from '../../src/resources/kinds.ts';

// The offline admission judges exactly what the committed CRDs hold: every kind loads (its schema uses
// only keywords and formats the evaluator implements, or loading fails), and every CEL rule parses and
// calls only standard CEL, which @bufbuild/cel implements: a rule that needs a Kubernetes CEL library
// function must fail here, not pass a user's plan unjudged.

function nodes(schema: SchemaProps): SchemaProps[] {
  return [
    schema,
    ...Object.values(schema.properties ?? {}).flatMap(nodes),
    ...(schema.items ? nodes(schema.items) : []),
    ...(schema.additionalProperties ? nodes(schema.additionalProperties) : []),
  ];
}

test('every kind of the operator loads from crds/, served in the version the operator uses', async () => {
  const loaded = await loadCustomKinds(CRD_DIR);
  for (const kind of kinds) {
    const found: CustomKind | undefined = loaded.find(`${kind.group}/${kind.version}`, kind.kind);
    assert.ok(found, `${kind.kind} in crds/`);
    assert.equal(found.namespaced, kind.scope === 'Namespaced');
  }
});

test('every CEL rule parses and calls only standard CEL; transition rules are told apart by oldSelf', async () => {
  const loaded = await loadCustomKinds(CRD_DIR);
  const used = new Set<string>();
  let transition = 0;
  let total = 0;
  for (const kind of kinds) {
    const found = loaded.find(`${kind.group}/${kind.version}`, kind.kind);
    for (const node of nodes(found?.schema ?? {})) {
      for (const rule of compiledRules(node)) {
        total++;
        if (rule.usesOldSelf) transition++;
        assert.equal(rule.usesOldSelf, /\boldSelf\b/.test(rule.rule.rule), rule.rule.rule);
        for (const name of rule.functions) {
          used.add(name);
          assert.ok(STANDARD_FUNCTIONS.has(name), `${kind.kind}: "${rule.rule.rule}" calls ${name}`);
        }
      }
    }
  }
  assert.ok(total > 50 && transition > 0 && transition < total, `${transition} of ${total}`);
  for (const name of ['has', 'size', 'exists', 'all', 'startsWith', 'matches', '@in']) {
    assert.ok(used.has(name), `the rules use ${name}`);
  }
});

test('a rule calling a Kubernetes library function is seen as one (the guard above can fail)', () => {
  const [rule] = compiledRules({ 'x-kubernetes-validations': [{ rule: 'isURL(self) && self.size() > 0' }] });
  assert.ok(rule?.functions.has('isURL') && !STANDARD_FUNCTIONS.has('isURL'));
});
