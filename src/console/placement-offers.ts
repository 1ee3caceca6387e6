import { z } from 'zod';
import type { GpuCloudClient } from '../api/client.ts';
import { gpuPodKind } from '../resources/gpu-pod/schema.ts';
import { API_VERSION } from '../resources/kinds.ts';
import { gpuPodOffers } from '../resources/pricing/gpu-pod.ts';
import { describeOffer } from '../resources/pricing/offers.ts';
import { offerSourceOf, PriceBook } from '../resources/pricing/price-book.ts';
import { usageError } from './errors.ts';
import type { ManifestObject } from './manifests.ts';
import type { Printable } from './output.ts';

const podManifest = z.object({
  apiVersion: z.literal(API_VERSION),
  kind: z.literal('GpuPod'),
  metadata: z.object({ name: z.string().optional() }).optional(),
  spec: z.unknown(),
});

/**
 * The offers each GpuPod of `manifests` that leaves the choice to the operator (`spec.placement`) accepts,
 * in the order placement tries them, the first marked as its pick: what the operator would do now, from
 * one search, with any GPU type allowed (a ProviderConfig's allow-list narrows it).
 */
export async function placementOffers(
  client: GpuCloudClient,
  manifests: readonly ManifestObject[],
): Promise<Printable> {
  const book = new PriceBook(offerSourceOf(client));
  const pods = [];
  for (const { source, object } of manifests) {
    const manifest = podManifest.safeParse(object);
    if (!manifest.success) continue;
    const name = manifest.data.metadata?.name ?? '?';
    const spec = gpuPodKind.spec.safeParse(manifest.data.spec);
    if (!spec.success) {
      throw usageError(
        `${source}: GpuPod ${name} is not valid: ${spec.error.issues[0]?.message ?? 'invalid'}`,
      );
    }
    if (spec.data.placement === undefined) continue;
    const { offers, none } = await gpuPodOffers(book, spec.data, () => true);
    pods.push({ name, offers, ...(offers.length === 0 ? { none } : {}) });
  }
  if (pods.length === 0) throw usageError('offers -f: no GpuPod with spec.placement in the manifests');
  return {
    value: pods,
    columns: ['gpupod', 'try', 'gpu', 'region', 'spot', 'per gpu/h', ''],
    rows: pods.flatMap(
      ({ name, offers, none }): Array<Array<string | number | boolean | undefined>> =>
        offers.length === 0
          ? [[name, '', '', '', '', '', none]]
          : offers.map((offer, index) => [
              name,
              index + 1,
              offer.gpuType,
              offer.region,
              offer.spot,
              offer.pricePerGpuHour.toFixed(4),
              index === 0 ? `pick: ${describeOffer(offer)}` : '',
            ]),
    ),
  };
}
