import { z } from 'zod';
import type { Operation } from '../../src/api/operation.ts';

/**
 * Small operations shaped like the real table (ids and timestamps that change type between wire and
 * application form), so the client's tests do not depend on the generated operation table.
 */
const id = z.codec(z.number().int().nonnegative(), z.string().regex(/^\d+$/), {
  decode: (wire) => String(wire),
  encode: (value) => Number(value),
});
const epochMs = z.codec(z.string().regex(/^\d+$/), z.number().int(), {
  decode: (wire) => Number(wire),
  encode: (value) => String(value),
});
const count = z.codec(z.string().regex(/^\d+$/), z.number().int().min(1).max(100), {
  decode: (wire) => Number(wire),
  encode: (value) => String(value),
});

export const thing = z.object({ id, name: z.string(), createdAt: epochMs });
export type Thing = z.output<typeof thing>;

/** A thing as the service sends it. */
export const wireThing = { id: 42, name: 'alpha', createdAt: '1700000000000' };

export const getThing = {
  name: 'things.get',
  method: 'GET',
  path: '/v2/things/{id}',
  params: z.object({ id: z.string().min(1) }),
  query: z.object({}),
  body: z.undefined(),
  data: thing,
  creates: false,
} satisfies Operation;

export const listThings = {
  name: 'things.list',
  method: 'GET',
  path: '/v2/things',
  params: z.object({}),
  query: z.object({
    statusList: z.array(z.enum(['RUNNING', 'PAUSED', 'TERMINATED'])).optional(),
    size: count.optional(),
  }),
  body: z.undefined(),
  data: z.array(thing),
  creates: false,
} satisfies Operation;

export const createThing = {
  name: 'things.create',
  method: 'POST',
  path: '/v2/things',
  params: z.object({}),
  query: z.object({}),
  body: z.object({
    name: z.string().min(1).max(20),
    gpuCount: z.number().int().positive(),
    startAt: epochMs,
  }),
  data: thing,
  creates: true,
} satisfies Operation;

export const deleteThing = {
  name: 'things.delete',
  method: 'DELETE',
  path: '/v2/things/{id}',
  params: z.object({ id }),
  query: z.object({}),
  body: z.undefined(),
  data: z.null(),
  creates: false,
} satisfies Operation;

export const noInput = { params: {}, query: {}, body: undefined };
export const newThing = {
  params: {},
  query: {},
  body: { name: 'alpha', gpuCount: 2, startAt: 1700000000000 },
};
