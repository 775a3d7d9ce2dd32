/**
 * A real load balancer for tests: Debian's HAProxy in front of server replicas on loopback,
 * round robin, health-checking each replica's /readyz, retrying a request whose connection to a
 * replica failed on the other one (so a replica that dies costs only the requests it was
 * serving). Every response names the replica that served it in `x-served-by`.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { startProcess, waitForPort, type RunningProcess } from './processes.ts';
import { toolPath } from './tools.ts';

export interface Backend {
  readonly name: string;
  readonly port: number;
}

export function haproxyConfig(port: number, backends: readonly Backend[], hostHeader: string): string {
  return `global
  maxconn 2000

defaults
  mode http
  timeout connect 2s
  timeout client 60s
  timeout server 60s
  timeout http-keep-alive 60s
  # A request whose connection to a replica fails is sent to another one.
  retries 3
  option redispatch 1
  retry-on conn-failure empty-response

frontend idforge
  bind 127.0.0.1:${port}
  default_backend replicas

backend replicas
  balance roundrobin
  option httpchk
  http-check send meth GET uri /readyz hdr Host ${hostHeader}
  http-check expect status 200
  default-server inter 300ms fall 2 rise 2
  http-response set-header x-served-by %s
${backends.map((b) => `  server ${b.name} 127.0.0.1:${b.port} check`).join('\n')}
`;
}

/** Starts HAProxy (foreground, its own process group) and waits until it listens. */
export async function startHaproxy(dir: string, port: number, backends: readonly Backend[], hostHeader: string): Promise<RunningProcess> {
  const cfg = join(dir, 'haproxy.cfg');
  writeFileSync(cfg, haproxyConfig(port, backends, hostHeader));
  const bin = toolPath('haproxy');
  const proc = startProcess('haproxy', bin, ['-db', '-f', cfg]);
  await waitForPort(port, { process: proc });
  return proc;
}
