/** `idforge serve` takes the SCIM token's rate as flags, documented in --help and checked before anything starts. */
import { describe, expect, it } from 'vitest';
import { main, SERVE_SUMMARY } from '../../src/cli/main.ts';
import type { CliIo } from '../../src/command/io.ts';
import { tempDir } from '../server/_support.ts';

async function serve(args: string[]) {
  let out = '';
  const io: CliIo = { stdout: (t) => { out += t; }, stderr: (t) => { out += t; }, env: {}, cwd: process.cwd(), color: false };
  // As bin/idforge.js composes it: the CLI's main with the server's own serve command.
  const command = { summary: SERVE_SUMMARY, load: () => import('../../src/server/serve-command.ts') };
  return { code: await main(['serve', ...args], io, { serve: command }), out };
}

describe('idforge serve SCIM flags', () => {
  it('documents them in --help with their defaults', async () => {
    const { code, out } = await serve(['--help']);
    expect(code).toBe(0);
    const flat = out.replace(/\s+/g, ' ');
    expect(flat).toContain('--scim-rate <n> requests per second one SCIM token may make, sustained; beyond it, 429 with Retry-After (default 100)');
    expect(flat).toContain('--scim-burst <n> requests a SCIM token may make at once before the rate applies (default 1000)');
  });
  it('refuses nonsense values before starting anything', async () => {
    const dir = tempDir();
    try {
      const { code, out } = await serve(['--data-dir', dir.path, '--scim-burst', '0']);
      expect(code).toBe(2);
      expect(out).toContain("--scim-burst must be a positive number, got '0'");
    } finally {
      dir.remove();
    }
  });
});
