// The tests' kube-controller-manager is the local stack's: see src/local/controller-manager.ts.
export { type RunningControllerManager, startControllerManager } from '../../src/local/controller-manager.ts';
