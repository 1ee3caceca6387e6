import { z } from 'zod';
import { ApiCode } from './codes.ts';

/** Every answer of the service wraps its payload in this envelope; success is `code === 10000`. */
export const envelopeSchema = z.object({
  code: z.number().int(),
  message: z.string().nullish(),
  data: z.unknown(),
});

export type Envelope = z.infer<typeof envelopeSchema>;

export function isSuccess(envelope: Envelope): boolean {
  return envelope.code === ApiCode.Success;
}
