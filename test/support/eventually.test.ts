import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { eventually, NotYet, notYet } from './eventually.ts';

describe('eventually', () => {
  test('answers what the check returned once it stops throwing', async () => {
    let tries = 0;
    const answer = await eventually(() => {
      tries++;
      assert.ok(tries >= 3, 'not yet');
      return tries;
    });
    assert.equal(answer, 3);
  });

  test('gives up after its bound, naming the last state seen, with the last failure as the cause', async () => {
    let state = 0;
    const started = Date.now();
    await assert.rejects(
      eventually(() => assert.equal(++state, -1), { timeoutMs: 200 }),
      (error: unknown) => {
        assert.ok(error instanceof Error);
        assert.match(error.message, /^gave up after 200 ms \(\d+ tries\): /);
        assert.match(error.message, new RegExp(`${state} !== -1`), 'the last state, not the first');
        assert.ok(error.cause instanceof assert.AssertionError);
        return true;
      },
    );
    assert.ok(Date.now() - started < 2_000, 'bounded');
  });

  test('a failure `retrying` does not name is thrown at once', async () => {
    let tries = 0;
    const broken = new Error('broken');
    await assert.rejects(
      eventually(
        () => {
          tries++;
          throw tries < 3 ? new NotYet('not yet') : broken;
        },
        { retrying: notYet },
      ),
      (error: unknown) => error === broken,
    );
    assert.equal(tries, 3);
  });
});
