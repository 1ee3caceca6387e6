import { operations } from '../../api/operations.ts';
import { paginate } from '../paging.ts';
import type { Simulation } from '../simulation.ts';
import { legacyVmView, vmTypesView, vmView } from '../vms/views.ts';
import { type Route, route } from './route.ts';

export function vmRoutes(sim: Simulation): Route[] {
  const { vms, ctx } = sim;
  const v2 = operations.vms;
  const v1 = operations.legacy.vms;
  return [
    route(v2.types, () => vmTypesView(ctx)),
    route(v2.create, ({ caller, body }) => vmView(vms.create(caller, body))),
    route(v2.get, ({ caller, params }) => vmView(vms.get(caller, params.id))),
    route(v2.list, ({ caller, query }) => {
      const page = paginate(vms.list(caller, query.status), query.page, query.size);
      return { ...page, items: page.items.map(vmView) };
    }),
    route(v2.update, ({ caller, params, body }) => vmView(vms.rename(caller, params.id, body.name))),
    route(v2.terminate, ({ caller, params }) => {
      vms.terminate(caller, params.id);
      return true;
    }),

    route(v1.types, () => vmTypesView(ctx)),
    route(v1.create, ({ caller, body }) =>
      legacyVmView(
        vms.create(caller, {
          vmTypeId: body.vmTypeId,
          region: body.region,
          name: body.nickName,
          isSpot: body.isSpot,
        }),
      ),
    ),
    route(v1.get, ({ caller, params }) => legacyVmView(vms.get(caller, params.vmId))),
    route(v1.list, ({ caller, body }) => {
      const page = paginate(vms.list(caller, body.search?.status), body.pageNumber, body.pageSize);
      return {
        records: page.items.map(legacyVmView),
        pageNumber: page.page,
        pageSize: page.size,
        totalPage: page.pages,
        totalRow: page.total,
      };
    }),
    route(v1.terminate, ({ caller, params }) => {
      vms.terminate(caller, params.vmId);
      return null;
    }),
  ];
}
