// The pricing module (src/resources/pricing/) on fakes of its own interface, OfferSource: which offer or VM
// type a spec or a running object is priced by, how exact each price says it is, and how often the price
// lists are read — a thousand prices must cost one search.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { GpuSpec } from '../../src/api/schemas/gpus.ts';
import type { Endpoint } from '../../src/api/schemas/serverless.ts';
import type { Vm, VmTypeItem, VmTypes } from '../../src/api/schemas/vms.ts';
import type { PodView } from '../../src/resources/gpu-pod/details.ts';
import { GpuPodSpecSchema } from '../../src/resources/gpu-pod/schema.ts';
import { gpuPodCloudPrice, gpuPodSpecPrice } from '../../src/resources/pricing/gpu-pod.ts';
import { gpuVmCloudPrice, gpuVmSpecQuote } from '../../src/resources/pricing/gpu-vm.ts';
import {
  type OfferSource,
  type Price,
  PriceBook,
  type Priced,
} from '../../src/resources/pricing/price-book.ts';
import { serverlessEndpointSpecPrice } from '../../src/resources/pricing/serverless-endpoint.ts';
import { type CloudObject, spendRate } from '../../src/resources/pricing/spend.ts';
import { ServerlessEndpointSpecSchema } from '../../src/resources/serverless-endpoint/schema.ts';

const L40S = 'NVIDIA L40S';
const H100 = 'NVIDIA H100 80GB HBM3';

interface OfferShape {
  gpuType?: string;
  region?: string;
  isSpot?: boolean;
  cloudType?: string;
  perGpu: string;
  counts?: number[];
  available?: boolean;
  gpuMemoryInGb?: number;
  maxVolumeInGb?: number;
}

function offer(shape: OfferShape): GpuSpec {
  const counts = shape.counts ?? [1, 2, 4, 8];
  return {
    gpuType: shape.gpuType ?? L40S,
    displayName: 'GPU',
    gpuMemoryInGb: shape.gpuMemoryInGb ?? 48,
    region: shape.region ?? 'us-east-1',
    cloudType: shape.cloudType ?? 'SECURE',
    acceleratorVendor: 'NVIDIA',
    isSpot: shape.isSpot ?? false,
    status: 'AVAILABLE',
    maxGpuCount: Math.max(...counts),
    availableGpuCounts: counts,
    ramPerGpuInGb: 62,
    vcpuPerGpu: 12,
    localDiskPerGpuInGb: 200,
    gpuCountOptions: counts.map((gpuCount) => ({
      gpuCount,
      available: shape.available ?? true,
      totalGpuMemoryInGb: 48 * gpuCount,
      totalRamInGb: 62 * gpuCount,
      totalVcpu: 12 * gpuCount,
      totalLocalDiskInGb: 200 * gpuCount,
      containerVolume: { minInGb: 10, maxInGb: shape.maxVolumeInGb ?? 200 * gpuCount },
      price: {
        pricePerGpuPerHour: shape.perGpu,
        gpuPricePerHour: (Number(shape.perGpu) * gpuCount).toFixed(4),
        containerVolumePricePerGbPerHour: '0.0002',
        currency: 'USD',
      },
    })),
  };
}

function vmType(
  vmTypeId: number,
  gpuCount: number,
  price: string,
  extra: Partial<VmTypeItem> = {},
): VmTypeItem {
  return {
    vmTypeId,
    gpuCount,
    pricePerHour: price,
    supportSpot: false,
    currency: 'USD',
    displayName: `type ${vmTypeId}`,
    cpuCores: 12 * gpuCount,
    memoryInGb: String(62 * gpuCount),
    gpuMemoryInGb: '48',
    gpuTotalMemoryInGb: String(48 * gpuCount),
    storageType: 'NVMe SSD',
    storageCapacityInGb: String(200 * gpuCount),
    osName: 'Ubuntu',
    osVersion: '22.04',
    supportOnDemand: true,
    ondemandAvailable: true,
    spotAvailable: false,
    ...extra,
  };
}

/** A fake account's price lists that counts its reads; `fail` makes the next reads throw. */
function source(offers: GpuSpec[], vmTypes: VmTypes = []) {
  const reads = { offers: 0, vmTypes: 0 };
  let failing: Error | undefined;
  const fake: OfferSource = {
    offers: async () => {
      reads.offers++;
      await Promise.resolve();
      if (failing) throw failing;
      return [...offers];
    },
    vmTypes: async () => {
      reads.vmTypes++;
      if (failing) throw failing;
      return vmTypes;
    },
  };
  return {
    fake,
    reads,
    offers,
    fail: (error: Error | undefined) => {
      failing = error;
    },
  };
}

function clock(start = 1_000_000) {
  let now = start;
  return { now: () => now, advance: (ms: number) => (now += ms) };
}

function priced(price: Price): Priced {
  assert.ok(price.priced, `expected a price, got ${JSON.stringify(price)}`);
  return price;
}

const podSpec = (raw: Record<string, unknown> = {}) =>
  GpuPodSpecSchema.parse({ image: 'ubuntu:24.04', gpuType: L40S, gpuCount: 1, ...raw });

function listedPod(raw: Partial<PodView> = {}): PodView {
  return {
    id: '101',
    orgId: '1',
    applicantId: '1',
    name: 'pod',
    image: 'ubuntu:24.04',
    imageRegistry: '',
    gpuType: L40S,
    gpuDisplayName: 'L40S',
    gpuCount: 2,
    region: 'us-east-1',
    cloudType: 'SECURE',
    containerVolumeInGb: 50,
    status: 'RUNNING',
    isSpot: false,
    callbackUrl: null,
    createdAt: 0,
    volumes: [],
    internalIp: null,
    ...raw,
  };
}

describe('PriceBook', () => {
  it('answers a thousand concurrent lookups with one search, and searches again only when the list is old', async () => {
    const lists = source([offer({ perGpu: '0.9900' })]);
    const time = clock();
    const book = new PriceBook(lists.fake, { maxAgeMs: 60_000, minRefreshMs: 5_000, now: time.now });
    const prices = await Promise.all(Array.from({ length: 1000 }, () => gpuPodSpecPrice(book, podSpec())));
    assert.equal(lists.reads.offers, 1);
    assert.ok(prices.every((price) => price.priced && price.perHour === 0.99));
    time.advance(59_999);
    await gpuPodSpecPrice(book, podSpec());
    assert.equal(lists.reads.offers, 1, 'younger than maxAgeMs: the same list');
    time.advance(1);
    await Promise.all([gpuPodSpecPrice(book, podSpec()), gpuPodSpecPrice(book, podSpec())]);
    assert.equal(lists.reads.offers, 2, 'as old as maxAgeMs: one read again, shared');
  });

  it('reads again for a lookup that found nothing, but not sooner than minRefreshMs after the last read', async () => {
    const lists = source([offer({ perGpu: '0.9900' })]);
    const time = clock();
    const book = new PriceBook(lists.fake, { maxAgeMs: 600_000, minRefreshMs: 5_000, now: time.now });
    const unknown = podSpec({ gpuType: 'NVIDIA B200' });
    assert.equal((await gpuPodSpecPrice(book, unknown)).priced, false);
    for (let i = 0; i < 100; i++) await gpuPodSpecPrice(book, unknown);
    assert.equal(lists.reads.offers, 1, 'a fresh list is not read again for a miss');
    time.advance(5_000);
    lists.offers.push(offer({ gpuType: 'NVIDIA B200', perGpu: '4.5000' }));
    assert.equal(priced(await gpuPodSpecPrice(book, unknown)).perHour, 4.5, 'an offer added since is found');
    assert.equal(lists.reads.offers, 2);
  });

  it('keeps the last list through a failed read, retries no sooner than minRefreshMs, and fails only with no list', async () => {
    const lists = source([offer({ perGpu: '0.9900' })]);
    const time = clock();
    const book = new PriceBook(lists.fake, { maxAgeMs: 60_000, minRefreshMs: 5_000, now: time.now });
    lists.fail(new Error('search down'));
    await assert.rejects(gpuPodSpecPrice(book, podSpec()), /search down/);
    await assert.rejects(gpuPodSpecPrice(book, podSpec()), /search down/);
    assert.equal(lists.reads.offers, 1, 'a failure is not retried at once');
    time.advance(5_000);
    lists.fail(undefined);
    const first = priced(await gpuPodSpecPrice(book, podSpec()));
    assert.equal(lists.reads.offers, 2);
    time.advance(60_000);
    lists.fail(new Error('search down again'));
    const stale = priced(await gpuPodSpecPrice(book, podSpec()));
    assert.equal(stale.perHour, 0.99, 'the last list stands in');
    assert.equal(stale.asOf, first.asOf, 'and says how old it is');
    await gpuPodSpecPrice(book, podSpec());
    assert.equal(lists.reads.offers, 3, 'not retried within minRefreshMs of the failure');
  });
});

describe('the price of a GpuPod spec', () => {
  const book = (offers: GpuSpec[]) => new PriceBook(source(offers).fake);

  it('is the on-demand offer of its type and count: pricePerGpuPerHour × gpuCount, quoted', async () => {
    const price = priced(
      await gpuPodSpecPrice(
        book([
          offer({ perGpu: '0.9900' }),
          offer({ perGpu: '0.5900', isSpot: true }),
          offer({ gpuType: H100, perGpu: '2.9900' }),
        ]),
        podSpec({ gpuCount: 4 }),
      ),
    );
    assert.equal(price.perHour, 0.99 * 4);
    assert.equal(price.lowestPerHour, 0.99 * 4);
    assert.equal(price.exactness, 'quoted');
    assert.equal(price.source, 'offers');
    assert.equal(price.available, true);
    assert.match(price.basis, /NVIDIA L40S on-demand SECURE in us-east-1: 0\.9900\/GPU-hour × 4/);
  });

  it('is the spot offer for a spot pod, at most its maxPrice', async () => {
    const offers = [offer({ perGpu: '0.9900' }), offer({ perGpu: '0.5900', isSpot: true })];
    assert.equal(
      priced(await gpuPodSpecPrice(book(offers), podSpec({ isSpot: true, gpuCount: 2 }))).perHour,
      1.18,
    );
    const capped = await gpuPodSpecPrice(book(offers), podSpec({ isSpot: true, gpuCount: 2, maxPrice: 1 }));
    assert.equal(capped.priced, false);
    assert.equal(!capped.priced && capped.reason, 'NoOfferMatches');
    assert.match(
      !capped.priced ? capped.message : '',
      /costs more than its maxPrice of 1 USD\/hour \(the lowest is 1\.18\)/,
    );
  });

  it('is a range up to the dearest when the regions it allows price it differently, among those with room', async () => {
    const offers = [
      offer({ region: 'us-east-1', perGpu: '0.9900' }),
      offer({ region: 'eu-west-1', perGpu: '1.2900' }),
      offer({ region: 'ap-southeast-1', perGpu: '2.0000', available: false }),
    ];
    const any = priced(await gpuPodSpecPrice(book(offers), podSpec()));
    assert.deepEqual([any.lowestPerHour, any.perHour, any.exactness], [0.99, 1.29, 'range']);
    const one = priced(await gpuPodSpecPrice(book(offers), podSpec({ regions: ['eu-west-1'] })));
    assert.deepEqual([one.perHour, one.exactness], [1.29, 'quoted']);
    const full = priced(await gpuPodSpecPrice(book(offers), podSpec({ regions: ['ap-southeast-1'] })));
    assert.deepEqual(
      [full.perHour, full.available],
      [2, false],
      'a full pool still has a price; the create would wait',
    );
  });

  it('keeps to the per-card minimums and the container volume the spec asks', async () => {
    const offers = [
      offer({ perGpu: '0.9900', gpuMemoryInGb: 48, maxVolumeInGb: 100 }),
      offer({ perGpu: '0.6900', gpuMemoryInGb: 24, cloudType: 'COMMUNITY' }),
    ];
    assert.equal(priced(await gpuPodSpecPrice(book(offers), podSpec())).exactness, 'range');
    assert.equal(
      priced(await gpuPodSpecPrice(book(offers), podSpec({ minSingleCardVramInGb: 40 }))).perHour,
      0.99,
    );
    assert.equal(
      priced(await gpuPodSpecPrice(book(offers), podSpec({ containerVolumeInGb: 150 }))).perHour,
      0.69,
    );
  });

  it('is no offer, saying what was asked, when nothing fits; a CPU pod is not quoted', async () => {
    const none = await gpuPodSpecPrice(
      book([offer({ perGpu: '0.9900', counts: [1, 2] })]),
      podSpec({ gpuCount: 8 }),
    );
    assert.deepEqual(none.priced ? undefined : [none.reason, none.message], [
      'NoOfferMatches',
      'no GPU offer matches 8 × NVIDIA L40S, on-demand: gpucloud offers lists what the cloud rents',
    ]);
    const cpu = await gpuPodSpecPrice(book([]), podSpec({ resourceType: 'CPU' }));
    assert.equal(!cpu.priced && cpu.reason, 'NotQuoted');
  });
});

describe('the price of a running GpuPod', () => {
  const offers = [
    offer({ perGpu: '0.9900' }),
    offer({ perGpu: '0.7000', cloudType: 'COMMUNITY' }),
    offer({ perGpu: '0.5900', isSpot: true }),
    offer({ perGpu: '1.2900', region: 'eu-west-1' }),
  ];

  it('is its own singleCardPrice × gpuCount when the view carries it: exact, with no search', async () => {
    const lists = source(offers);
    const price = priced(
      await gpuPodCloudPrice(new PriceBook(lists.fake), listedPod({ singleCardPrice: '0.8000' })),
    );
    assert.deepEqual([price.perHour, price.exactness, price.source], [1.6, 'exact', 'object']);
    assert.equal(lists.reads.offers, 0);
  });

  it('is, from a list entry, the offer of its type, region, cloud type, spot and count', async () => {
    const book = new PriceBook(source(offers).fake);
    const price = priced(await gpuPodCloudPrice(book, listedPod()));
    assert.deepEqual([price.perHour, price.exactness], [1.98, 'quoted']);
    assert.equal(priced(await gpuPodCloudPrice(book, listedPod({ isSpot: true }))).perHour, 1.18);
    assert.equal(priced(await gpuPodCloudPrice(book, listedPod({ cloudType: 'COMMUNITY' }))).perHour, 1.4);
    assert.equal(priced(await gpuPodCloudPrice(book, listedPod({ region: 'eu-west-1' }))).perHour, 2.58);
    const gone = await gpuPodCloudPrice(book, listedPod({ region: 'sa-east-1' }));
    assert.match(
      !gone.priced ? gone.message : '',
      /no GPU offer of 2 × NVIDIA L40S .* in sa-east-1 to price pod 101 by/,
    );
  });
});

describe('the price of a GpuVm', () => {
  const types: VmTypes = [
    {
      gpuType: L40S,
      regions: [
        {
          region: 'us-east-1',
          types: [
            vmType(401, 1, '0.9900', { supportSpot: true, spotPricePerHour: '0.5900', spotAvailable: true }),
            vmType(402, 2, '1.9800'),
            vmType(412, 2, '2.1000', { cpuCores: 32, memoryInGb: '256' }),
          ],
        },
        { region: 'ap-southeast-1', types: [vmType(401, 1, '1.0900', { ondemandAvailable: false })] },
      ],
    },
  ];
  const book = () => new PriceBook(source([], types).fake);

  it('of a spec is its type in its region, on-demand or spot: what status.pricePerHour will say', async () => {
    const quote = await gpuVmSpecQuote(book(), { vmTypeId: 401, region: 'us-east-1', isSpot: false });
    assert.deepEqual([priced(quote.price).perHour, priced(quote.price).exactness], [0.99, 'quoted']);
    assert.deepEqual(quote.gpus, { types: [L40S], count: 1 });
    const spot = await gpuVmSpecQuote(book(), { vmTypeId: 401, region: 'us-east-1', isSpot: true });
    assert.equal(priced(spot.price).perHour, 0.59);
    const full = await gpuVmSpecQuote(book(), { vmTypeId: 401, region: 'ap-southeast-1', isSpot: false });
    assert.deepEqual([priced(full.price).perHour, priced(full.price).available], [1.09, false]);
  });

  it('of a spec is no VM type, saying why, for an unknown type, another region, or spot where none is', async () => {
    const messages = [];
    for (const spec of [
      { vmTypeId: 999, region: 'us-east-1', isSpot: false },
      { vmTypeId: 402, region: 'eu-west-1', isSpot: false },
      { vmTypeId: 402, region: 'us-east-1', isSpot: true },
    ]) {
      const { price } = await gpuVmSpecQuote(book(), spec);
      assert.equal(!price.priced && price.reason, 'NoVmTypeMatches');
      messages.push(price.priced ? '' : price.message);
    }
    assert.deepEqual(messages, [
      'VM type 999 is not in the VM types listing: gpucloud vm-types lists them',
      'VM type 402 is offered in us-east-1, not in eu-west-1',
      'VM type 402 is not offered as spot in us-east-1',
    ]);
  });

  it('running is found by its shape, which the VM object carries instead of a type: a range when shapes tie', async () => {
    const vm = (raw: Partial<Vm>): Vm =>
      ({
        id: '7',
        region: 'us-east-1',
        gpuType: L40S,
        gpuCount: 2,
        cpuCores: 24,
        memoryInGb: '124',
        isSpot: false,
        status: 'RUNNING',
        ...raw,
      }) as Vm;
    assert.equal(priced(await gpuVmCloudPrice(book(), vm({}))).perHour, 1.98);
    assert.equal(priced(await gpuVmCloudPrice(book(), vm({ cpuCores: 32, memoryInGb: '256' }))).perHour, 2.1);
    const unknownShape = priced(await gpuVmCloudPrice(book(), vm({ cpuCores: 8 })));
    assert.deepEqual(
      [unknownShape.lowestPerHour, unknownShape.perHour, unknownShape.exactness],
      [1.98, 2.1, 'range'],
    );
    assert.equal((await gpuVmCloudPrice(book(), vm({ gpuCount: 8 }))).priced, false);
  });
});

describe('the price of a ServerlessEndpoint spec', () => {
  const offers = [
    offer({ gpuType: L40S, perGpu: '0.9900' }),
    offer({ gpuType: L40S, perGpu: '0.5900', isSpot: true }),
    offer({ gpuType: H100, perGpu: '2.9900' }),
  ];
  const spec = (raw: Record<string, unknown>) =>
    ServerlessEndpointSpecSchema.parse({
      image: 'worker:1',
      resources: [{ region: 'us-east-1', gpuType: L40S, gpuCount: 2 }],
      ...raw,
    });

  it('is workers × the on-demand price of a worker', async () => {
    const price = priced(
      await serverlessEndpointSpecPrice(new PriceBook(source(offers).fake), spec({ workers: 3 })),
    );
    assert.deepEqual([price.perHour, price.exactness, price.maxPerHour], [0.99 * 2 * 3, 'quoted', undefined]);
    const one = priced(await serverlessEndpointSpecPrice(new PriceBook(source(offers).fake), spec({})));
    assert.equal(one.perHour, 1.98, 'one worker when unset, as the operator creates it');
  });

  it('autoscaled: at its starting workers, and at most at maxWorkers', async () => {
    const price = priced(
      await serverlessEndpointSpecPrice(
        new PriceBook(source(offers).fake),
        spec({
          serviceMode: 'QUEUE',
          autoscaling: { minWorkers: 0, maxWorkers: 5, targetQueuePerWorker: 2 },
        }),
      ),
    );
    assert.deepEqual([price.perHour, price.maxPerHour], [0, 1.98 * 5]);
  });

  it('is a range over resources of different prices, and no offer when one resource has none', async () => {
    const both = spec({
      workers: 2,
      resources: [
        { region: 'us-east-1', gpuType: L40S, gpuCount: 1 },
        { region: 'us-east-1', gpuType: H100, gpuCount: 1 },
      ],
    });
    const price = priced(await serverlessEndpointSpecPrice(new PriceBook(source(offers).fake), both));
    assert.deepEqual([price.lowestPerHour, price.perHour, price.exactness], [1.98, 5.98, 'range']);
    const missing = await serverlessEndpointSpecPrice(
      new PriceBook(source(offers).fake),
      spec({ resources: [{ region: 'eu-west-1', gpuType: L40S, gpuCount: 1 }] }),
    );
    assert.match(
      !missing.priced ? missing.message : '',
      /no on-demand GPU offer matches a worker of 1 × NVIDIA L40S in eu-west-1/,
    );
  });
});

describe('the spend rate of running objects', () => {
  const endpoint = (raw: Partial<Endpoint>): Endpoint =>
    ({
      id: '9',
      status: 'RUNNING',
      runningWorkers: 2,
      totalWorkers: 2,
      resources: [{ gpuType: L40S, gpuCount: 1 }],
      perHourPrice: '1.9800',
      ...raw,
    }) as Endpoint;

  it('adds the prices of what holds GPUs, as the live-GPU limit counts it, with one search for all', async () => {
    const lists = source([offer({ perGpu: '0.9900' })]);
    const book = new PriceBook(lists.fake);
    const objects: CloudObject[] = [
      ...Array.from({ length: 500 }, (_, i) => ({
        kind: 'GpuPod' as const,
        object: listedPod({ id: String(i), gpuCount: 1 }),
      })),
      { kind: 'GpuPod', object: listedPod({ id: 'paused', status: 'PAUSED' }) },
      { kind: 'GpuPod', object: listedPod({ id: 'cpu', resourceType: 'CPU' }) },
      { kind: 'ServerlessEndpoint', object: endpoint({}) },
      {
        kind: 'ServerlessEndpoint',
        object: endpoint({ id: 'stopped', status: 'STOPPED', runningWorkers: 0 }),
      },
    ];
    const rate = await spendRate(book, objects);
    assert.equal(lists.reads.offers, 1);
    assert.equal(rate.counted, 501);
    assert.ok(Math.abs(rate.perHour - (500 * 0.99 + 1.98)) < 1e-9, String(rate.perHour));
    assert.deepEqual([rate.unpriced, rate.exact], [[], false]);
  });

  it('leaves out what it cannot price, and says which, so the rate is a lower bound', async () => {
    const rate = await spendRate(new PriceBook(source([]).fake), [
      { kind: 'GpuPod', object: listedPod({ id: '55', gpuType: 'NVIDIA B200' }) },
      { kind: 'GpuPod', object: listedPod({ id: '56', singleCardPrice: '1.0000' }) },
    ]);
    assert.equal(rate.perHour, 2);
    assert.deepEqual(
      rate.unpriced.map(({ kind, id }) => `${kind}/${id}`),
      ['GpuPod/55'],
    );
  });
});
