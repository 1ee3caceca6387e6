import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { choosePort, inRange, recordedPort } from '../../src/virtual-node/kubelet-port.ts';

// Each virtual node's kubelet API port: stable for a name, kept once recorded, never another node's.
describe('a virtual node’s kubelet API port', () => {
  const range = { first: 10250, last: 10259 };
  const none = new Map<number, string>();

  test('the same name gets the same port, in the range; names spread over it', () => {
    const names = Array.from({ length: 40 }, (_, i) => `gpucloud-team-${i}`);
    const ports = names.map((name) => choosePort(name, undefined, range, none));
    assert.deepEqual(
      names.map((name) => choosePort(name, undefined, range, none)),
      ports,
    );
    for (const port of ports) assert.ok(port !== undefined && inRange(port, range), String(port));
    assert.ok(new Set(ports).size > 3, `spread: ${ports}`);
  });

  test('a recorded port is kept while it is in the range and no other node holds it', () => {
    const hashed = choosePort('gpucloud-a', undefined, range, none);
    const other = hashed === 10255 ? 10256 : 10255;
    assert.equal(choosePort('gpucloud-a', other, range, none), other);
    assert.equal(choosePort('gpucloud-a', other, range, new Map([[other, 'gpucloud-a']])), other);
    // Held by another node, or out of a range since narrowed: picked again.
    assert.equal(choosePort('gpucloud-a', other, range, new Map([[other, 'gpucloud-b']])), hashed);
    assert.equal(choosePort('gpucloud-a', 9999, range, none), hashed);
  });

  test('the ports other nodes hold are passed over, wrapping round; none free is undefined', () => {
    const hashed = choosePort('gpucloud-a', undefined, range, none) ?? 0;
    const next = hashed === range.last ? range.first : hashed + 1;
    assert.equal(choosePort('gpucloud-a', undefined, range, new Map([[hashed, 'gpucloud-b']])), next);
    const allButOne = new Map(
      Array.from({ length: 10 }, (_, i) => [range.first + i, `n${i}`] as const).filter(
        ([port]) => port !== range.first + 3,
      ),
    );
    assert.equal(choosePort('gpucloud-a', undefined, range, allButOne), range.first + 3);
    allButOne.set(range.first + 3, 'n3');
    assert.equal(choosePort('gpucloud-a', undefined, range, allButOne), undefined);
    assert.equal(choosePort('gpucloud-a', undefined, { first: 443, last: 443 }, none), 443);
  });

  test('a recorded port is read only when it is a port', () => {
    assert.equal(recordedPort('10251'), 10251);
    for (const text of [undefined, '', '0', '65536', '10251x', '-1', '1e4', ' 10251'])
      assert.equal(recordedPort(text), undefined, String(text));
  });
});
