import assert from 'node:assert/strict';
import { test } from 'node:test';
import { DroppedObjectError, documentsOf, manifestDiff } from '../../tools/helm/manifest-diff.ts';

// How the tenant API file is computed from two renderings: object by object, parsed, so that a comment or
// a layout that differs is no change and a value that differs is.

const service = (port: number, comment = '') => `---
# Source: chart/templates/service.yaml${comment}
apiVersion: v1
kind: Service
metadata:
  name: web
  namespace: app
spec:
  ports: [{ port: ${port} }]
`;
const role = `---
# Source: chart/templates/rbac.yaml
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: web
rules: []
`;
const apiService = `---
apiVersion: apiregistration.k8s.io/v1
kind: APIService
metadata:
  name: v1.web.example
spec:
  group: web.example
`;

test('documents are keyed by kind, namespace and name, with their text and comments as rendered', () => {
  const documents = documentsOf(`---\n# Source: only a comment\n${role}${service(80)}`);
  assert.deepEqual(
    documents.map((document) => document.key),
    ['ClusterRole web', 'Service app/web'],
  );
  assert.match(documents[1]?.text ?? '', /^# Source: chart\/templates\/service\.yaml\napiVersion: v1/);
});

test('holds the added objects and the changed ones in full, in the second rendering order', () => {
  const diff = manifestDiff(role + service(80), service(443) + role + apiService);
  assert.deepEqual(diff.added, ['APIService v1.web.example']);
  assert.deepEqual(diff.changed, ['Service app/web']);
  assert.deepEqual(
    diff.documents.map((document) => document.key),
    ['Service app/web', 'APIService v1.web.example'],
  );
  assert.match(diff.documents[0]?.text ?? '', /port: 443/);
});

test('an object rendered with other comments or layout is unchanged', () => {
  const relaid = service(80, '\n# a comment only the second rendering has').replace(
    'ports: [{ port: 80 }]',
    'ports:\n    - port: 80',
  );
  assert.deepEqual(manifestDiff(role + service(80), relaid + role).documents, []);
});

test('the same kind and name in another namespace is another object', () => {
  const diff = manifestDiff(service(80), service(80) + service(80).replace('namespace: app', 'namespace: b'));
  assert.deepEqual(diff.added, ['Service b/web']);
});

test('a second rendering that drops an object is refused: applying a file cannot delete it', () => {
  assert.throws(
    () => manifestDiff(role + service(80), service(80)),
    (error: unknown) => error instanceof DroppedObjectError && /drops ClusterRole web/.test(error.message),
  );
});

test('an object rendered twice, or with no kind or name, is refused', () => {
  assert.throws(() => documentsOf(role + role), /ClusterRole web is rendered twice/);
  assert.throws(() => documentsOf('---\napiVersion: v1\nmetadata: {}\n'), /no kind or name/);
});
