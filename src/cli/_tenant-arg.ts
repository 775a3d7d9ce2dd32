/** The one tenant a command reads (`idforge export <tenant>`, `idforge events <tenant>`): its name, or a usage error that says what is wrong. */
import { DNS_LABEL, NAME_RULES } from '../contract/index.ts';
import { UsageError } from '../command/io.ts';

export function oneTenant(positionals: readonly string[], usage: string): string {
  const [tenant, ...more] = positionals;
  if (tenant === undefined) throw new UsageError(`no tenant given\n${usage}`);
  if (more.length > 0) throw new UsageError(`one tenant at a time (got ${positionals.join(', ')})\n${usage}`);
  if (!DNS_LABEL.test(tenant)) throw new UsageError(`'${tenant}' is not a tenant name: it ${NAME_RULES.dnsLabel}\n${usage}`);
  return tenant;
}
