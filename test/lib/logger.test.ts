import assert from 'node:assert/strict';
import { test } from 'node:test';
import { reconcileLogger } from '../../src/lib/logger.ts';
import { captureLogs } from '../support/log-capture.ts';

const SECRET = 'sk-live-0123456789';

test('censors secret-like fields wherever a caller puts them', () => {
  const logs = captureLogs();
  logs.logger.info({ apiKey: SECRET, 'x-api-key': SECRET }, 'top level');
  logs.logger.info({ config: { apiKey: SECRET, webhookAuthKey: SECRET } }, 'nested');
  logs.logger.info(
    { request: { headers: { 'x-api-key': SECRET, authorization: `Bearer ${SECRET}` } } },
    'headers',
  );
  logs.logger.info({ secret: { data: { token: SECRET } } }, 'a Secret');
  logs.logger.info({ manifest: { stringData: { password: SECRET } } }, 'a manifest');
  logs.logger.child({ apiKey: SECRET }).info('bound on a child');
  assert.equal(logs.lines.length, 6);
  assert.ok(!logs.text().includes(SECRET), logs.text());
  assert.equal(logs.lines[0]?.apiKey, '[REDACTED]');
  assert.deepEqual(logs.lines[2]?.request, {
    headers: { 'x-api-key': '[REDACTED]', authorization: '[REDACTED]' },
  });
});

test('writes JSON lines with textual levels and ISO timestamps', () => {
  const logs = captureLogs();
  logs.logger.warn('careful');
  const [line] = logs.lines;
  assert.equal(line?.level, 'warn');
  assert.match(String(line?.time), /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
});

test('a reconcile logger carries the controller, the object and a reconcile id on every line', () => {
  const logs = captureLogs();
  const controllerLog = logs.logger.child({ controller: 'gpupod' });
  const first = reconcileLogger(controllerLog, { namespace: 'team-a', name: 'trainer' });
  first.info('observed');
  first.child({ step: 'create' }).info('creating');
  reconcileLogger(controllerLog, { namespace: 'team-a', name: 'trainer' }).info('next reconcile');
  const [observed, creating, next] = logs.lines;
  for (const line of [observed, creating, next]) {
    assert.equal(line?.controller, 'gpupod');
    assert.equal(line?.namespace, 'team-a');
    assert.equal(line?.name, 'trainer');
  }
  assert.equal(typeof observed?.reconcileID, 'string');
  assert.equal(creating?.reconcileID, observed?.reconcileID);
  assert.notEqual(next?.reconcileID, observed?.reconcileID);
});
