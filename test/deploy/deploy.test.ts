/**
 * What a platform team deploys with (deploy/): the Kubernetes manifests are schema-checked offline
 * by kubernetes-validate (PyPI; it ships the Kubernetes schemas; scripts/ensure-tools.sh installs
 * it into tools/venv), and both they and the Dockerfile are checked against the server itself:
 * their arguments are options `idforge serve` accepts, the probes name routes that answer, the
 * Secret holds what the Deployment reads. No Docker engine or cluster runs here.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { parseCommandArgs } from '../../src/command/args.ts';
import { startServer } from '../../src/server/index.ts';
import { parseArgsConfig, parseServeValues, serveUsage } from '../../src/server/options.ts';
import { toolsBinDir, toolVersions } from '../support/tools.ts';

const run = promisify(execFile);
const ROOT = resolve(import.meta.dirname, '../..');
const K8S = join(ROOT, 'deploy/kubernetes');
const VALIDATOR = join(toolsBinDir(), '..', 'venv', 'bin', 'kubernetes-validate');
const scratch = mkdtempSync(join(tmpdir(), 'idforge-deploy-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

/* eslint-disable @typescript-eslint/no-explicit-any */
const load = (file: string): any[] => parseAllDocuments(readFileSync(join(K8S, file), 'utf8')).map((d) => d.toJS());
const manifests = readdirSync(K8S).filter((f) => f.endsWith('.yaml') && f !== 'kustomization.yaml').sort();
const byKind = (kind: string): any => manifests.flatMap(load).find((m) => m.kind === kind);
const serveArgs = (args: readonly string[]) => parseServeValues(parseCommandArgs(args, parseArgsConfig(), serveUsage()).values, '/');

describe('Kubernetes manifests', () => {
  it('pass kubernetes-validate --strict (schemas of Kubernetes 1.37), and a broken one does not', async () => {
    const { stdout } = await run(VALIDATOR, ['--strict', ...manifests.map((f) => join(K8S, f))]);
    for (const f of manifests) expect(stdout).toMatch(new RegExp(`${f} passed for resource`));
    // The validator is real: a misspelt field and a wrong type are refused.
    const original = readFileSync(join(K8S, 'deployment.yaml'), 'utf8');
    for (const [from, to, why] of [['readinessProbe:', 'readynessProbe:', "'readynessProbe' was unexpected"], ['replicas: 3', 'replicas: three', "'three' is not of type 'integer'"]] as const) {
      writeFileSync(join(scratch, 'broken.yaml'), original.replace(from, to));
      const failed = await run(VALIDATOR, ['--strict', join(scratch, 'broken.yaml')]).then(() => undefined, (e: { stdout: string; code: number }) => e);
      expect(failed?.code).toBe(1);
      expect(failed?.stdout).toContain(why);
    }
  });

  it('kustomization lists every manifest; Deployment, Service, Secret and PodDisruptionBudget agree with each other', () => {
    expect([...load('kustomization.yaml')[0].resources].sort()).toEqual(manifests);
    const deployment = byKind('Deployment');
    const labels = deployment.spec.template.metadata.labels;
    expect(deployment.spec.selector.matchLabels).toEqual(labels);
    expect(byKind('Service').spec.selector).toEqual(labels);
    expect(byKind('PodDisruptionBudget').spec.selector.matchLabels).toEqual(labels);
    expect(byKind('PodDisruptionBudget').spec.maxUnavailable).toBeLessThan(deployment.spec.replicas);
    const secret = byKind('Secret');
    const [container] = deployment.spec.template.spec.containers;
    for (const env of container.env) expect(Object.keys(secret.stringData)).toContain(env.valueFrom.secretKeyRef.key);
    const keyVolume = deployment.spec.template.spec.volumes.find((v: any) => v.secret?.secretName === secret.metadata.name);
    expect(Object.keys(secret.stringData)).toContain(keyVolume.secret.items[0].key);
  });

  it("the container's arguments are options idforge serve accepts, and its probes and ports are the server's", () => {
    const deployment = byKind('Deployment');
    const spec = deployment.spec.template.spec;
    const [container] = spec.containers;
    const settings = serveArgs(container.args);
    expect(container.ports).toEqual([{ name: 'http', containerPort: settings.port }]);
    expect(settings.host).toBe('0.0.0.0');
    expect(container.env.map((e: any) => e.name)).toContain('IDFORGE_DATABASE_URL');
    // The master key file is the Secret's, mounted read-only; the data dir is writable, the rest read-only.
    const keyMount = container.volumeMounts.find((m: any) => settings.masterKeyFile!.startsWith(`${m.mountPath}/`));
    expect(keyMount.readOnly).toBe(true);
    expect(spec.volumes.find((v: any) => v.name === keyMount.name).secret.items[0].path).toBe(settings.masterKeyFile!.slice(keyMount.mountPath.length + 1));
    expect(container.volumeMounts.find((m: any) => m.mountPath === settings.dataDir)).toBeDefined();
    expect(container.securityContext.readOnlyRootFilesystem).toBe(true);
    expect(spec.securityContext.runAsNonRoot).toBe(true);
    expect(container.livenessProbe.httpGet).toEqual({ path: '/healthz', port: 'http' });
    expect(container.readinessProbe.httpGet).toEqual({ path: '/readyz', port: 'http' });
    // Kubernetes waits for the pause and the drain before it kills.
    expect(spec.terminationGracePeriodSeconds).toBeGreaterThan(settings.shutdownTimeoutSeconds! + container.lifecycle.preStop.sleep.seconds);
  });

  it("a server started with the Deployment's arguments answers its probes as the kubelet sends them (by pod IP, no tenant Host)", async () => {
    const [container] = byKind('Deployment').spec.template.spec.containers;
    const keyFile = join(scratch, 'master.key');
    const { workers: _w, ...settings } = serveArgs(container.args);
    // Here: a free port on loopback, the data dir and key file in a scratch dir, SQLite (no database URL in this test).
    const server = await startServer({ ...settings, port: 0, host: '127.0.0.1', dataDir: join(scratch, 'data'), masterKeyFile: keyFile, log: () => {}, env: {} });
    try {
      for (const probe of [container.livenessProbe, container.readinessProbe, container.startupProbe]) {
        const res = await fetch(`http://127.0.0.1:${server.port}${probe.httpGet.path}`);
        expect(res.status, probe.httpGet.path).toBe(200);
      }
      expect(server.issuer('acme')).toBe('https://acme.id.example.com/oauth2/');
    } finally {
      await server.close();
    }
  });
});

describe('Dockerfile', () => {
  const text = readFileSync(join(ROOT, 'deploy/Dockerfile'), 'utf8');
  const instructions = text.split('\n').filter((l) => /^[A-Z]+ /.test(l));
  const json = (name: string): string[] => JSON.parse(instructions.find((l) => l.startsWith(`${name} `))!.slice(name.length + 1));

  it('builds from the pinned Node.js slim image and runs as a non-root user', () => {
    const froms = instructions.filter((l) => l.startsWith('FROM ')).map((l) => l.split(' ')[1]);
    expect(froms).toEqual([toolVersions().NODE_IMAGE, toolVersions().NODE_IMAGE]);
    expect(toolVersions().NODE_IMAGE).toBe(`node:${toolVersions().NODE_VERSION!.split('.')[0]}-slim`);
    const lastUser = instructions.filter((l) => l.startsWith('USER ')).at(-1);
    expect(lastUser).toBe('USER node');
  });

  it('runs idforge serve with arguments the server accepts, listening where it says it does', () => {
    expect(json('ENTRYPOINT')).toEqual(['node', 'bin/idforge.js', 'serve']);
    const settings = serveArgs(json('CMD'));
    expect(instructions).toContain(`EXPOSE ${settings.port}`);
    expect(settings.dataDir).toBe('/data');
    expect(instructions).toContain('VOLUME ["/data"]');
    expect(text).toContain(`http://127.0.0.1:${settings.port}/healthz`);
  });
});
