// Serves dist/ on the port of redirect_uri. A static host (any CDN) does the same job in production.
import { createReadStream, existsSync, readFileSync, statSync } from 'node:fs';
import { createServer } from 'node:http';
import { extname, join, normalize } from 'node:path';
import { fileURLToPath } from 'node:url';

const config = JSON.parse(readFileSync(new URL('./spa-config.json', import.meta.url), 'utf8'));
const origin = new URL(config.redirect_uri);
const port = Number(process.env.PORT || origin.port || 80);
// Where to listen: HOST when set; else loopback for a local origin (localhost, *.localhost, 127.x: a
// developer's machine, where nothing else on the network should reach the app), else every interface
// (a container or host behind a load balancer or port mapping, which decides what reaches it).
const isLocal = (h) => h === 'localhost' || h.endsWith('.localhost') || /^127\.\d+\.\d+\.\d+$/.test(h) || h === '[::1]';
const host = process.env.HOST || (isLocal(origin.hostname) ? '127.0.0.1' : '0.0.0.0');
const root = fileURLToPath(new URL('./dist/', import.meta.url));
const TYPES = { '.html': 'text/html; charset=utf-8', '.js': 'text/javascript; charset=utf-8', '.map': 'application/json', '.json': 'application/json', '.css': 'text/css', '.svg': 'image/svg+xml', '.ico': 'image/x-icon' };

createServer((req, res) => {
  let file;
  try {
    file = join(root, normalize(decodeURIComponent(new URL(req.url ?? '/', 'http://x').pathname)));
  } catch {
    file = '';
  }
  // Unknown paths get the app itself, so deep links and the redirect back from login both work.
  if (!file.startsWith(root) || !existsSync(file) || statSync(file).isDirectory()) file = join(root, 'index.html');
  res.writeHead(200, {
    'Content-Type': TYPES[extname(file)] ?? 'application/octet-stream',
    'Cache-Control': 'no-cache',
    // The authorization code arrives in the query string: never leak it to other sites.
    'Referrer-Policy': 'no-referrer',
    'X-Content-Type-Options': 'nosniff',
  });
  createReadStream(file).pipe(res);
}).listen(port, host, () => console.log(`serving ${root} at ${origin.origin} (${host}:${port})`));
