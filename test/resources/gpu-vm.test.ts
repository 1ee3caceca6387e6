// The GpuVm adapter (src/resources/gpu-vm/adapter.ts) on its own: what it plans (a rename is the one change
// a VM takes), how cloud state reads as status, drift, late initialisation, and what its create sends.
// Cloud calls go through a real client to the simulator; pure functions get VM objects the simulator made,
// changed one field at a time.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { VM_STATUSES, type Vm, type VmTypeItem } from '../../src/api/schemas/vms.ts';
import { CREATE_NAME } from '../../src/managed/core/annotations.ts';
import { type ExternalKind, meteringOf } from '../../src/managed/core/external-kind.ts';
import { MANAGED_SPEC_FIELDS } from '../../src/resources/common/schema.ts';
import { gpuVmAdapter } from '../../src/resources/gpu-vm/adapter.ts';
import { type GpuVmSpec, GpuVmSpecSchema } from '../../src/resources/gpu-vm/schema.ts';
import {
  actContext,
  type Cloud,
  camel,
  lateInitialised,
  lateInitialisedFields,
  resource,
  STEP_MS,
  spy,
  startCloud,
  stepOf,
  watchedFields,
} from './adapter-support.ts';

const REGION = 'us-east-1';
const L40S = 'NVIDIA L40S';

interface ListedType {
  gpuType: string;
  region: string;
  item: VmTypeItem;
}

describe('GpuVm adapter', () => {
  let cloud: Cloud;
  let adapter: ExternalKind<GpuVmSpec, Vm>;
  /** The VM types listing, flattened: where test specs take their type ids from. */
  let types: ListedType[];
  /** A 2-GPU L40S type offered in REGION, with a spot price. */
  let l40s: ListedType;
  let running: Vm;

  const vmSpec = (raw: Record<string, unknown> = {}): GpuVmSpec =>
    GpuVmSpecSchema.parse({ vmTypeId: l40s.item.vmTypeId, region: REGION, ...raw });
  const vm = (spec: GpuVmSpec, metadata = {}) => resource('GpuVm', spec, metadata);
  const created = async (mr = vm(vmSpec())): Promise<Vm> => {
    const made = await adapter.create(mr, actContext(mr));
    cloud.step();
    return (await adapter.get(made.id)) as Vm;
  };

  before(async () => {
    cloud = await startCloud();
    adapter = gpuVmAdapter(cloud.client);
    types = (await cloud.client.vms.types()).flatMap(({ gpuType, regions }) =>
      regions.flatMap(({ region, types: items }) => items.map((item) => ({ gpuType, region, item }))),
    );
    const found = types.find(
      ({ gpuType, region, item }) =>
        gpuType === L40S && region === REGION && item.gpuCount === 2 && item.spotPricePerHour !== undefined,
    );
    assert.ok(found, 'the listing offers a 2-GPU L40S type with spot');
    l40s = found;
    running = await created(vm(vmSpec({ name: 'base-vm' })));
    assert.equal(running.status, 'RUNNING');
  });
  after(() => cloud?.stop());

  describe('plan', () => {
    it('is in sync while the VM has the spec’s name, or metadata.name when the spec leaves it out', async () => {
      const named = vm(vmSpec({ name: running.name }));
      assert.deepEqual(await adapter.plan(named, running, actContext(named)), { kind: 'in-sync' });
      const unnamed = vm(vmSpec(), { name: running.name });
      assert.deepEqual(await adapter.plan(unnamed, running, actContext(unnamed)), { kind: 'in-sync' });
    });

    it('renames a VM whose name differs, with one update call that gives it the spec’s name', async () => {
      const target = await created(vm(vmSpec({ name: 'before-rename' })));
      const mr = vm(vmSpec({ name: 'after-rename' }));
      const step = stepOf(await adapter.plan(mr, target, actContext(mr)));
      assert.equal(step.reason, 'Renaming');
      assert.match(step.describe, new RegExp(`\\b${target.id}\\b.*before-rename.*after-rename`));
      const updates = cloud.callsOf('vms.update');
      await step.run();
      assert.equal(cloud.callsOf('vms.update'), updates + 1);
      const renamed = (await adapter.get(target.id)) as Vm;
      assert.equal(renamed.name, 'after-rename');
      assert.deepEqual(await adapter.plan(mr, renamed, actContext(mr)), { kind: 'in-sync' });
    });

    it('a name removed from the spec (cleared to nothing) renames the VM to metadata.name', async () => {
      const target = await created(vm(vmSpec({ name: 'nickname' })));
      const lateInit = adapter.lateInit;
      assert.ok(lateInit);
      const mr = vm({ ...lateInit.cleared, ...vmSpec() }, { name: 'metadata-name' });
      const step = stepOf(await adapter.plan(mr, target, actContext(mr)));
      await step.run();
      assert.equal(((await adapter.get(target.id)) as Vm).name, 'metadata-name');
    });

    it('does not wait for a VM that is starting: the cloud renames a VM in any state', async () => {
      const first = vm(vmSpec({ name: 'starting' }));
      const made = await adapter.create(first, actContext(first));
      const mr = { ...first, spec: { ...first.spec, name: 'renamed-while-starting' } };
      assert.equal(made.status, 'INITIALIZING');
      const step = stepOf(await adapter.plan(mr, made, actContext(mr)));
      await step.run();
      const renamed = (await adapter.get(made.id)) as Vm;
      assert.deepEqual([renamed.status, renamed.name], ['INITIALIZING', 'renamed-while-starting']);
    });
  });

  describe('readiness', () => {
    it('reads each cloud status as its own reason; only RUNNING is Ready, only FAILED is broken', () => {
      for (const status of VM_STATUSES) {
        const readiness = adapter.observe(vm(vmSpec()), { ...running, status }).readiness;
        assert.equal(readiness.ready, status === 'RUNNING', status);
        assert.equal(readiness.reason, camel(status), status);
        assert.equal(readiness.broken === true, status === 'FAILED', status);
        assert.ok(readiness.message.length > 0);
        assert.equal(adapter.phaseOf({ ...running, status }), status);
      }
    });

    it('a status the operator does not know is not Ready and says which', () => {
      const readiness = adapter.observe(vm(vmSpec()), { ...running, status: 'MIGRATING' }).readiness;
      assert.deepEqual([readiness.ready, readiness.reason], [false, 'UnknownPhase']);
      assert.match(readiness.message, /MIGRATING/);
    });
  });

  describe('drift', () => {
    it('a VM made from its spec has none, spot or not', async () => {
      for (const isSpot of [true, false, undefined]) {
        const mr = vm(vmSpec({ isSpot }));
        const made = await created(mr);
        assert.deepEqual(adapter.observe(mr, made).drift, [], `isSpot: ${isSpot}`);
      }
    });

    it('reports a region or capacity kind that differs: the VM can change neither', () => {
      const mr = vm(vmSpec({ region: running.region, isSpot: running.isSpot }));
      assert.deepEqual(adapter.observe(mr, running).drift, []);
      assert.deepEqual(adapter.observe(mr, { ...running, region: 'eu-west-1' }).drift, ['region']);
      assert.deepEqual(adapter.observe(mr, { ...running, isSpot: !running.isSpot }).drift, ['isSpot']);
      assert.deepEqual(
        adapter.observe(mr, { ...running, region: 'eu-west-1', isSpot: !running.isSpot }).drift,
        ['region', 'isSpot'],
      );
    });

    it('the name, which a rename changes, and a capacity kind the spec leaves out are not drift', () => {
      const mr = vm(vmSpec({ name: 'wanted' }));
      assert.deepEqual(adapter.observe(mr, { ...running, name: 'other', isSpot: true }).drift, []);
      assert.deepEqual(adapter.observe(mr, { ...running, name: 'other', isSpot: false }).drift, []);
    });
  });

  describe('late initialisation', () => {
    it('fills exactly the fields the schema marks late-initialised, with the VM’s values', () => {
      for (const isSpot of [true, false]) {
        const from = adapter.lateInit?.from({ ...running, isSpot }, vmSpec()) ?? {};
        assert.deepEqual(Object.keys(from).sort(), lateInitialisedFields(GpuVmSpecSchema.shape));
        assert.deepEqual(from, { name: running.name, isSpot });
      }
    });

    it('adopting a VM changes nothing: the spec completed from it plans in-sync and shows no drift', async () => {
      const made = await cloud.client.vms.create({
        vmTypeId: l40s.item.vmTypeId,
        region: REGION,
        name: 'made-elsewhere',
        isSpot: true,
      });
      cloud.step();
      const adopted = (await adapter.get(made.id)) as Vm;
      const lateInit = adapter.lateInit;
      assert.ok(lateInit);
      const mr = lateInitialised(vm(vmSpec()), lateInit, adopted);
      assert.deepEqual(await adapter.plan(mr, adopted, actContext(mr)), { kind: 'in-sync' });
      assert.deepEqual(adapter.observe(mr, adopted).drift, []);
    });
  });

  it('statusOf shows the VM’s name, shape, capacity kind and addresses as the cloud reports them', () => {
    const status = adapter.observe(vm(vmSpec()), running).status;
    const shown = [
      'name',
      'region',
      'gpuType',
      'gpuDisplayName',
      'gpuCount',
      'gpuMemoryInGb',
      'cpuCores',
      'memoryInGb',
      'storageInGb',
      'osInfo',
      'isSpot',
      'ipAddress',
      'domainName',
      'sshTemplate',
      'notebookUrl',
    ] as const;
    assert.deepEqual(Object.keys(status).sort(), [...shown].sort());
    for (const field of shown) assert.equal(status[field], running[field], field);
  });

  it('fingerprint changes exactly when a field the reconcile needs to hear of changes: status, name, addresses', () => {
    // The status drives phase, readiness and recovery; the name is planned (renamed); the IP address and
    // domain name go to status and the connection Secret. The shape, region and spot flag cannot change,
    // and the times are bookkeeping.
    assert.deepEqual(watchedFields(running, adapter.fingerprint), [
      'domainName',
      'ipAddress',
      'name',
      'status',
    ]);
  });

  it('isGone: a VM terminating or terminated is gone for good; every other status is not', async () => {
    for (const status of VM_STATUSES) {
      assert.equal(
        adapter.isGone({ ...running, status }),
        status === 'TERMINATING' || status === 'TERMINATED',
      );
    }
    const doomed = await created();
    await adapter.delete?.(doomed.id);
    assert.equal(adapter.isGone((await adapter.get(doomed.id)) as Vm), true);
  });

  describe('owner marker', () => {
    it('a VM carries no environment to mark: no markerOf', () => {
      assert.equal(adapter.identity?.markerOf, undefined);
    });

    it('isOwnCreate: a VM with the name the create was sent with (the create-name annotation), else the spec’s', async () => {
      const target = await created(vm(vmSpec({ name: 'sent-name' })));
      const plain = vm(vmSpec({ name: 'sent-name' }));
      assert.equal(await adapter.identity?.isOwnCreate(plain, target, actContext(plain)), true);
      const byMetadata = vm(vmSpec(), { name: 'sent-name' });
      assert.equal(await adapter.identity?.isOwnCreate(byMetadata, target, actContext(byMetadata)), true);
      // Renamed in the spec before the id was recorded: the annotation still names what was sent.
      const renamed = vm(vmSpec({ name: 'renamed-since' }), { annotations: { [CREATE_NAME]: 'sent-name' } });
      assert.equal(await adapter.identity?.isOwnCreate(renamed, target, actContext(renamed)), true);
      const other = vm(vmSpec({ name: 'sent-name' }), { annotations: { [CREATE_NAME]: 'another-name' } });
      assert.equal(await adapter.identity?.isOwnCreate(other, target, actContext(other)), false);
      const stranger = vm(vmSpec({ name: 'not-this-one' }));
      assert.equal(await adapter.identity?.isOwnCreate(stranger, target, actContext(stranger)), false);
    });
  });

  it('heldGpus: a VM holds its GPUs unless stopped or terminated (docs/crd-reference.md, maxLiveGpus)', () => {
    for (const status of VM_STATUSES) {
      const held = meteringOf(adapter).heldGpus({ ...running, status, gpuCount: 8 });
      assert.equal(held, status === 'STOPPED' || status === 'TERMINATED' ? 0 : 8, status);
    }
  });

  describe('demand', () => {
    it('the GPUs of the spec’s VM type, as the types listing gives them, read once for every resource', async () => {
      const fresh = gpuVmAdapter(cloud.client);
      const reads = cloud.callsOf('vms.types');
      for (const { gpuType, item } of types.slice(0, 5)) {
        const mr = vm(GpuVmSpecSchema.parse({ vmTypeId: item.vmTypeId, region: REGION }));
        const { perHour: _price, ...demand } = await meteringOf(fresh).demand(mr);
        assert.deepEqual(demand, {
          gpus: { types: [gpuType], count: item.gpuCount },
          live: true,
        });
      }
      assert.equal(cloud.callsOf('vms.types'), reads + 1);
    });

    it('a type the listing does not have reads it again (a type added since), and then demands no GPUs', async () => {
      const fresh = gpuVmAdapter(cloud.client);
      await meteringOf(fresh).demand(vm(vmSpec()));
      const reads = cloud.callsOf('vms.types');
      const unknown = Math.max(...types.map(({ item }) => item.vmTypeId)) + 1;
      const { perHour: _price, ...demand } = await meteringOf(fresh).demand(
        vm(GpuVmSpecSchema.parse({ vmTypeId: unknown, region: REGION })),
      );
      assert.deepEqual(demand, { gpus: undefined, live: true });
      assert.equal(cloud.callsOf('vms.types'), reads + 1);
    });
  });

  describe('create', () => {
    it('sends the type, region, capacity kind, name and mount paths; nothing of the operator’s own', async (t) => {
      const sent = spy(t, cloud.client.vms, 'create');
      const spec = vmSpec({
        name: 'full-vm',
        isSpot: true,
        volumeMountPaths: { 'vol-1': '/data' },
        recoveryPolicy: 'Recreate',
        writeConnectionSecretToRef: { name: 'full-vm-conn' },
        managementPolicies: ['*'],
        deletionPolicy: 'Orphan',
        providerConfigRef: { name: 'acme' },
      });
      const mr = vm(spec);
      const made = await adapter.create(mr, actContext(mr));
      assert.deepEqual(sent, [
        {
          vmTypeId: l40s.item.vmTypeId,
          region: REGION,
          isSpot: true,
          name: 'full-vm',
          volumeMountPaths: { 'vol-1': '/data' },
        },
      ]);
      for (const field of [...MANAGED_SPEC_FIELDS, 'recoveryPolicy']) {
        assert.ok(field in spec, field);
        assert.equal(field in (sent[0] as object), false, field);
      }
      assert.deepEqual(
        [made.name, made.region, made.isSpot, made.gpuType, made.gpuCount],
        ['full-vm', REGION, true, l40s.gpuType, l40s.item.gpuCount],
      );
    });

    it('asks for on-demand capacity and metadata.name when the spec leaves them out, and no mount paths', async (t) => {
      const sent = spy(t, cloud.client.vms, 'create');
      const mr = vm(vmSpec(), { name: 'plain-vm' });
      const made = await adapter.create(mr, actContext(mr));
      assert.deepEqual(sent, [
        { vmTypeId: l40s.item.vmTypeId, region: REGION, isSpot: false, name: 'plain-vm' },
      ]);
      assert.equal(made.isSpot, false);
    });
  });

  it('details: the hourly price of the VM’s type (its spot price for a spot VM) and the cost while it lived', async () => {
    const details = adapter.details;
    assert.ok(details);
    for (const isSpot of [false, true]) {
      const made = await created(vm(vmSpec({ isSpot })));
      await adapter.delete?.(made.id);
      cloud.step();
      const ended = (await adapter.get(made.id)) as Vm;
      assert.equal(ended.status, 'TERMINATED');
      assert.equal(details.applies(ended), false, 'a terminated VM costs nothing more');
      assert.equal(details.applies(made), true);
      const hourly = isSpot ? l40s.item.spotPricePerHour : l40s.item.pricePerHour;
      const hours = ((ended.terminatedAt ?? 0) - ended.createdAt) / 3_600_000;
      assert.equal(hours, (2 * STEP_MS) / 3_600_000, 'created, running one step, terminating one step');
      assert.deepEqual(await details.fetch(ended), {
        pricePerHour: hourly,
        currency: l40s.item.currency,
        estimatedCost: (hours * Number(hourly)).toFixed(4),
      });
    }
  });
});
