/**
 * Before `idforge plan|apply` changes anything: users the model declares that another door manages
 * on the live server (an identity provider through SCIM, the admin console). The model alone cannot
 * know it; the server would refuse the PUT halfway through an apply. So each is a problem of the
 * model, at the user's place in it, in the contract's words (`ownedElsewhere`), and nothing is sent.
 */
import type { AdminClient } from '../../admin-client/index.ts';
import { MANAGED_BY, mayChange, ownedElsewhere, type Problem } from '../../contract/index.ts';
import type { Model } from '../../schema/model.ts';

export async function ownershipProblems(client: AdminClient, model: Model): Promise<Problem[]> {
  const problems: Problem[] = [];
  for (const [t, tenant] of model.tenants.entries()) {
    if (tenant.users.length === 0) continue;
    // A tenant that does not exist yet (404) has nobody in it.
    const live = new Map(((await client.listAll('listUsers', { tenant: tenant.name })) ?? []).map((u) => [u.id, u]));
    for (const [i, user] of tenant.users.entries()) {
      const owner = live.get(user.id)?.managedBy;
      if (live.has(user.id) && !mayChange(owner, MANAGED_BY)) {
        problems.push({ code: 'owned-elsewhere', path: ['tenants', t, 'users', i, 'id'], message: ownedElsewhere('user', user.id, owner, MANAGED_BY) });
      }
    }
  }
  return problems;
}
