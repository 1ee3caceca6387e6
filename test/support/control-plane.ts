// One real control plane per test file: started before the file's first test, stopped after its last,
// even when tests fail.
import { after, before } from 'node:test';
import {
  type ControlPlane,
  type ControlPlaneOptions,
  startControlPlane,
} from '../../src/local/controlplane.ts';

export function useControlPlane(options?: ControlPlaneOptions): () => ControlPlane {
  let plane: ControlPlane | undefined;
  before(async () => {
    plane = await startControlPlane(options);
  });
  after(async () => {
    await plane?.stop();
  });
  return () => {
    if (!plane)
      throw new Error('the control plane is available only inside tests, once `before` has started it');
    return plane;
  };
}
