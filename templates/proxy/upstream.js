// The protected app: it answers every request with the headers it received, so you can see what
// oauth2-proxy forwards (X-Forwarded-User, X-Forwarded-Email, ...). It does not authenticate
// anyone itself: the proxy in front of it does, and it must only be reachable through the proxy.
import { createServer } from 'node:http';

const upstream = new URL(process.env.UPSTREAM_URL || process.env.OAUTH2_PROXY_UPSTREAMS?.split(',')[0] || 'http://127.0.0.1:4181');

createServer((req, res) => {
  const body = JSON.stringify({ method: req.method, url: req.url, headers: req.headers }, null, 2);
  res.writeHead(200, { 'Content-Type': 'application/json', 'Cache-Control': 'no-store' });
  res.end(body);
  // Listen on the upstream's own host (loopback by default) so nothing bypasses the proxy.
}).listen(Number(upstream.port || 80), upstream.hostname, () => {
  console.log(`upstream echo app listening on ${upstream.origin}`);
});
