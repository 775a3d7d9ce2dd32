/**
 * Users the model declares that another door manages on the live server (an identity provider
 * through SCIM, the admin console). The model alone cannot know it; the server's dry run of the
 * tenant batch refuses them (the contract's ownership rule, `mayChange`), and nothing is sent. Each
 * such refusal is a problem of the model, at the user's place in it, in the contract's words.
 */
import type { BatchEntryResult, Problem } from '../../contract/index.ts';
import type { Model } from '../../schema/model.ts';

export function ownershipProblems(model: Model, tenantName: string, results: readonly BatchEntryResult[]): Problem[] {
  const t = model.tenants.findIndex((x) => x.name === tenantName);
  if (t < 0) return [];
  const users = model.tenants[t]!.users;
  return results
    .filter((r) => r.outcome === 'refused' && r.kind === 'user' && r.error === 'conflict' && r.path === 'managedBy')
    .flatMap((r) => {
      const i = users.findIndex((u) => u.id === r.user);
      return i < 0 ? [] : [{ code: 'owned-elsewhere', path: ['tenants', t, 'users', i, 'id'], message: r.reason ?? '' }];
    });
}
