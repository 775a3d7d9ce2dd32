import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['src/**/*.test.ts', 'test/**/*.test.ts', 'templates/**/*.test.ts'],
    // End-to-end tests start real processes (server, oauth2-proxy, Chromium, the Pulumi engine).
    testTimeout: 120_000,
    hookTimeout: 300_000,
    pool: 'forks',
  },
});
