import { GPU_MODELS, type GpuModel } from './catalog.ts';

/** A model's prices per GPU-hour in USD: on demand, and spot where it is offered as spot. */
export interface ModelPrices {
  readonly onDemand: number;
  readonly spot: number | undefined;
}

/** A change of a model's prices; `spot: null` withdraws its spot offer. */
export interface PriceChange {
  readonly onDemand?: number;
  readonly spot?: number | null;
}

/**
 * What the cloud charges today. Prices start at the catalog's and can change at run time, as a real
 * cloud's do: searches and listings quote the current price, and an object keeps the price it was
 * created at (its `singleCardPrice`), which is why the operator reads the charged price from the object.
 */
export class Market {
  readonly #prices = new Map<string, ModelPrices>(
    GPU_MODELS.map((model) => [
      model.gpuType,
      { onDemand: model.pricePerGpuPerHour, spot: model.spotPricePerGpuPerHour },
    ]),
  );

  /** The model's prices now; a model the catalog does not list (CPU) keeps its own. */
  pricesOf(model: GpuModel): ModelPrices {
    return (
      this.#prices.get(model.gpuType) ?? {
        onDemand: model.pricePerGpuPerHour,
        spot: model.spotPricePerGpuPerHour,
      }
    );
  }

  spotOffered(model: GpuModel): boolean {
    return this.pricesOf(model).spot !== undefined;
  }

  /** USD per GPU-hour; spot asked of a model without a spot offer is charged on demand. */
  perGpuHour(model: GpuModel, isSpot: boolean): number {
    const prices = this.pricesOf(model);
    return isSpot ? (prices.spot ?? prices.onDemand) : prices.onDemand;
  }

  hourly(model: GpuModel, gpuCount: number, isSpot: boolean): number {
    return this.perGpuHour(model, isSpot) * gpuCount;
  }

  set(gpuType: string, change: PriceChange): ModelPrices {
    const current = this.#prices.get(gpuType);
    if (current === undefined) throw new Error(`${gpuType} is not a GPU type of the catalog`);
    for (const [field, value] of Object.entries(change)) {
      if (value !== null && value !== undefined && !(Number.isFinite(value) && value > 0))
        throw new RangeError(`${field} must be a positive price in USD per GPU-hour, got ${value}`);
    }
    const next = {
      onDemand: change.onDemand ?? current.onDemand,
      spot: change.spot === null ? undefined : (change.spot ?? current.spot),
    };
    this.#prices.set(gpuType, next);
    return next;
  }
}
