/**
 * The one format of the env files idforge writes (oauth2-proxy.env, session.env): a `KEY=value`
 * line per variable, the value written as is, never quoted, so that each of these reads it
 * unchanged:
 *
 * - `docker run --env-file` and `kubectl create configmap --from-env-file` take the rest of the
 *   line literally: quotes would stay part of the value (`'openid email profile'` is not a scope).
 * - Compose (`env_file`, `--env-file`) strips quotes, expands `$VAR` and `${VAR}` in unquoted
 *   values, ends an unquoted value at a ` #` comment, and trims it.
 * - systemd (`EnvironmentFile=`) strips quotes, reads backslash escapes in unquoted values, trims
 *   them, and ignores lines starting with `#` or `;`.
 *
 * A value none of them would change is written; any other value is an error (the model check
 * names the field, the generator refuses the file), never a silently different configuration.
 */
import { problem, type Path, type Problem } from './problems.ts';

/** An environment variable name every reader accepts (POSIX portable names). */
export const ENV_KEY = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** Why `value` cannot be written unquoted into an env file, or undefined when it can. */
export function envValueProblem(value: string): string | undefined {
  // Lone surrogates have no UTF-8 form; systemd refuses the byte order mark and noncharacters.
  if (/[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]|[\uFEFF\uFFFE\uFFFF\uFDD0-\uFDEF]/.test(value)) return 'is not plain UTF-8 text';
  if (/[\u0000-\u001F\u007F]/.test(value)) return 'holds a line break, tab or other control character';
  if (value !== value.trim()) return 'starts or ends with whitespace, which Compose and systemd drop';
  if (/['"`]/.test(value)) return 'holds a quote, which Compose and systemd read as quoting and Docker and kubectl keep';
  if (value.includes('$')) return "holds '$', which Compose expands as a variable";
  if (value.includes('\\')) return 'holds a backslash, which systemd reads as an escape';
  if (value.includes('#')) return "holds '#', which starts a comment for Compose after a space";
  return undefined;
}

/** The env-file rule as a model problem at `path`, naming the file the value goes to. */
export function checkEnvValue(value: string, path: Path, file: string): Problem[] {
  const why = envValueProblem(value);
  return why === undefined
    ? []
    : [problem('env-file-value', path, `${JSON.stringify(value)} ${why}: it cannot be written into ${file}, which Docker, Compose, systemd and kubectl must all read unchanged`)];
}
