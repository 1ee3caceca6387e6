import type { VmStatus } from '../../api/schemas/index.ts';
import type { Reservation } from '../capacity.ts';
import type { VmType } from '../catalog.ts';
import type { Stepping } from '../lifecycle.ts';
import type { Stored } from '../store.ts';

/** A VM create request, v1 or v2, in one shape. */
export interface VmSpec {
  readonly vmTypeId: number;
  readonly region: string;
  readonly name: string;
  readonly isSpot: boolean;
}

export interface VmRecord extends Stored<VmStatus>, Stepping {
  readonly orgId: string;
  readonly type: VmType;
  readonly region: string;
  readonly isSpot: boolean;
  name: string;
  reservation: Reservation | undefined;
  readonly createdAt: number;
  updatedAt: number;
  terminatedAt: number | null;
}
