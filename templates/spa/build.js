// Bundles src/ and spa-config.json into dist/. The SPA has no backend: everything it knows about
// the identity service is compiled in here.
import { copyFileSync, mkdirSync, readFileSync } from 'node:fs';
import { build } from 'esbuild';

const config = JSON.parse(readFileSync(new URL('./spa-config.json', import.meta.url), 'utf8'));
for (const key of ['wellknown_endpoint', 'client_id', 'redirect_uri', 'scope']) {
  if (typeof config[key] !== 'string' || config[key] === '') throw new Error(`spa-config.json: ${key} is required`);
}

mkdirSync(new URL('./dist/', import.meta.url), { recursive: true });
await build({
  entryPoints: [new URL('./src/main.js', import.meta.url).pathname],
  outfile: new URL('./dist/app.js', import.meta.url).pathname,
  bundle: true,
  format: 'esm',
  target: 'es2022',
  sourcemap: true,
  minify: process.env.NODE_ENV === 'production',
  // Where the API lives is a deployment detail, not part of the identity config (spa.env).
  define: { 'process.env.API_URL': JSON.stringify(process.env.API_URL ?? '') },
  logLevel: 'info',
});
copyFileSync(new URL('./src/index.html', import.meta.url), new URL('./dist/index.html', import.meta.url));
