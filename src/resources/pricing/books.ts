import type { GpuCloudClient } from '../../api/client.ts';
import { type Clock, systemClock } from '../../lib/clock.ts';
import { offerSourceOf, type Price, PriceBook } from './price-book.ts';
import { budgetWeight } from './spend.ts';

const books = new WeakMap<GpuCloudClient, PriceBook>();

/**
 * The price book of the account `client` is for: one per account, shared by every kind's adapter (all on
 * the operator's one clock, the first caller's).
 */
export function priceBookOf(client: GpuCloudClient, clock: Clock = systemClock): PriceBook {
  let book = books.get(client);
  if (!book) {
    book = new PriceBook(offerSourceOf(client), { now: () => clock.now() });
    books.set(client, book);
  }
  return book;
}

/** What a price weighs against a budget, per hour; undefined when nothing prices it. */
export function perHourOf(price: Price): number | undefined {
  return price.priced ? budgetWeight(price) : undefined;
}
