import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  heartbeatDue,
  LEASE_DURATION_SECONDS,
  LEASE_RENEW_MS,
  renewalDueIn,
  STATUS_REPORT_MS,
} from '../../src/virtual-node/cadence.ts';

describe('virtual node cadence', () => {
  test("a kubelet's: a 40 s Lease renewed every 10 s", () => {
    assert.equal(LEASE_DURATION_SECONDS, 40);
    assert.equal(LEASE_RENEW_MS, 10_000);
  });

  test('a Lease never renewed is due now; one renewed is due a renewal interval later', () => {
    assert.equal(renewalDueIn(undefined, 5_000), 0);
    assert.equal(renewalDueIn(1_000, 1_000), LEASE_RENEW_MS);
    assert.equal(renewalDueIn(1_000, 4_000), LEASE_RENEW_MS - 3_000);
    assert.equal(renewalDueIn(1_000, 1_000 + LEASE_RENEW_MS + 5), 0);
  });

  test('the status heartbeat is written again once a report interval has passed, or when there is none', () => {
    assert.equal(heartbeatDue(0, STATUS_REPORT_MS - 1), false);
    assert.equal(heartbeatDue(0, STATUS_REPORT_MS), true);
    assert.equal(heartbeatDue(Number.NaN, 0), true);
  });
});
