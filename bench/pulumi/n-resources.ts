// Bench program: `bench:count` independent dynamic resources (StableSecret, no remote calls), to
// measure what the engine itself costs per dynamic resource.
import * as pulumi from '@pulumi/pulumi';
import { StableSecret } from '../../src/provider/stable-secret.ts';

const count = new pulumi.Config('bench').requireNumber('count');
for (let i = 0; i < count; i++) new StableSecret(`s${i}`, { bytes: 16 });
export const resources = count;
