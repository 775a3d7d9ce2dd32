/**
 * Who owns a user or a group, and who may change it: one rule that every door runs (the admin API,
 * SCIM, `idforge plan|apply`, the Pulumi providers), with the same words.
 *
 * An object records its owner in `managedBy`: `idforge` (made from the model in Git by `idforge
 * apply` or Pulumi), `scim` (made by an identity provider through /scim/v2), `console` (made in
 * the admin console), or nothing (made by hand through the admin API).
 */
import { MANAGED_BY, MANAGED_BY_CONSOLE, OTHER_DOORS } from './names.ts';

/** Marks objects made through SCIM (/scim/v2); only SCIM changes them. */
export const SCIM_MANAGED_BY = 'scim';

const OWNERS: Readonly<Record<string, string>> = {
  [MANAGED_BY]: 'idforge from the model in Git',
  [SCIM_MANAGED_BY]: 'SCIM (an identity provider provisions it)',
  console: 'the admin console',
};

/** `SCIM (an identity provider provisions it)`, `idforge from the model in Git`, ... */
export function ownerWords(managedBy: unknown): string {
  if (typeof managedBy !== 'string') return 'nobody (it was made by hand through the admin API)';
  return OWNERS[managedBy] ?? `'${managedBy}'`;
}

/**
 * Whether a writer (the `managedBy` it writes with) may change an object with this owner. SCIM
 * changes only what SCIM made: an identity provider must never take over a person the model (or
 * anyone else) declares. The model in Git may take over what the console made (`idforge export`
 * writes it into a model, and apply then marks it managed in Git). Other writers may not change
 * what the console or SCIM manages; objects of idforge or nobody stay theirs to change.
 */
export function mayChange(owner: unknown, writer: unknown): boolean {
  if (writer === SCIM_MANAGED_BY) return owner === SCIM_MANAGED_BY;
  if (owner === MANAGED_BY_CONSOLE && writer === MANAGED_BY) return true;
  return typeof owner !== 'string' || !OTHER_DOORS.includes(owner) || owner === writer;
}

/** Why a writer may not change an object, in the words every door uses. */
export function ownedElsewhere(kind: 'user' | 'group', id: string, owner: unknown, writer: unknown): string {
  const head = `${kind} '${id}' is managed by ${ownerWords(owner)}`;
  if (owner === MANAGED_BY) return `${head}: the model owns it, so change it in the model, not through ${writer === SCIM_MANAGED_BY ? 'SCIM' : ownerWords(writer)}`;
  if (owner === SCIM_MANAGED_BY) {
    return writer === MANAGED_BY
      ? `${head}: the model cannot declare it; remove it from the model, or have the identity provider stop managing it first`
      : `${head}: change it through the identity provider, not ${ownerWords(writer)}`;
  }
  if (writer === SCIM_MANAGED_BY) return `${head}, not by SCIM: SCIM changes only the users and groups it made`;
  return `${head}: only it may change it`;
}
