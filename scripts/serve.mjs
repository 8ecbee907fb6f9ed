// A plain static server for the demo and the browser tests (Node's http only).
// Usage: node scripts/serve.mjs [--port N] [--cors] [--mount /prefix=dir]... [--file /path=file]...
// By default it serves www/ at /, pkg/ at /pkg/, and the models setup fetches:
// the default (SmolLM2) at /models/default.gguf and Gemma 3 270M at
// /models/gemma-3-270m.gguf. It sends COOP/COEP so pages are cross-origin isolated
// (SharedArrayBuffer, i.e. threaded wasm, is allowed). --cors instead lets
// any origin read everything (the wasm-bindgen test runner's page fetches
// models and references from here).
// Files are served with HTTP Range support (206, one range), except with
// ?norange in the URL (the server then acts as one without it: no
// Accept-Ranges, Range ignored). GET /__requests?path=P says how many
// requests P has had ({ head, get, range, bytes }); /__requests?reset clears.
// GET /__fail?path=P&after=N makes the server drop the connection once N
// bytes of P have been sent (from now on, counted over all requests), as a
// network that fails partway; /__fail?clear ends it. Files carry an ETag and
// Last-Modified (validators for the browser's model cache). --rate B limits
// each response to B bytes per second, as one slow connection.
import http from 'node:http';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const mounts = [['/pkg/', path.join(root, 'pkg')]];
const files = new Map([
  ['/models/default.gguf', path.join(root, '.cache/SmolLM2-135M-Instruct.Q4_1.gguf')],
  ['/models/gemma-3-270m.gguf', path.join(root, '.cache/gemma-3-270m-q4_k_m.gguf')],
]);
let port = 8080;
let cors = false;
let rate = 0;
const args = process.argv.slice(2);
for (let i = 0; i < args.length; i++) {
  const [k, v] = [args[i], args[i + 1]];
  if (k === '--port') { port = Number(v); i++; }
  else if (k === '--cors') cors = true;
  else if (k === '--rate') { rate = Number(v); i++; }
  else if (k === '--mount') { const [p, d] = v.split('='); mounts.push([p.endsWith('/') ? p : p + '/', path.resolve(d)]); i++; }
  else if (k === '--file') { const [p, f] = v.split('='); files.set(p, path.resolve(f)); i++; }
  else { console.error(`unknown argument ${k}`); process.exit(2); }
}
mounts.push(['/', path.join(root, 'www')]);

const types = {
  '.html': 'text/html; charset=utf-8', '.js': 'text/javascript', '.mjs': 'text/javascript',
  '.css': 'text/css', '.json': 'application/json', '.wasm': 'application/wasm',
  '.png': 'image/png', '.gguf': 'application/octet-stream', '.ts': 'text/plain',
};

function resolve(urlPath) {
  if (files.has(urlPath)) return files.get(urlPath);
  for (const [prefix, dir] of mounts) {
    if (!urlPath.startsWith(prefix)) continue;
    const rel = urlPath.slice(prefix.length) || 'index.html';
    const full = path.resolve(dir, rel);
    if (full !== dir && !full.startsWith(dir + path.sep)) return null; // no ../ escapes
    return full;
  }
  return null;
}

const counts = new Map();
function count(p, kind, bytes) {
  const c = counts.get(p) ?? { head: 0, get: 0, range: 0, bytes: 0 };
  c[kind]++;
  c.bytes += bytes;
  counts.set(p, c);
}

let fail = null; // { path, after, sent }

// Send bytes start..end of `file`: paced to `rate`, and cut short where a
// failure was asked for.
function send(res, file, urlPath, start, end) {
  if (end < start) { res.end(); return; }
  let last = end;
  if (fail && fail.path === urlPath) {
    const left = fail.after - fail.sent;
    if (left <= 0) { res.destroy(); return; }
    last = Math.min(end, start + left - 1);
    fail.sent += last - start + 1;
  }
  const stream = fs.createReadStream(file, { start, end: last, highWaterMark: 64 << 10 });
  const t0 = Date.now();
  let sent = 0;
  stream.on('data', (c) => {
    sent += c.length;
    const ok = res.write(c);
    const wait = rate ? (sent / rate) * 1000 - (Date.now() - t0) : 0;
    if (ok && wait <= 0) return;
    stream.pause();
    const resume = () => setTimeout(() => stream.resume(), Math.max(0, wait));
    if (ok) resume(); else res.once('drain', resume);
  });
  stream.on('end', () => { if (last < end) res.destroy(); else res.end(); });
  stream.on('error', () => res.destroy());
  res.on('close', () => stream.destroy());
}

const server = http.createServer((req, res) => {
  const url = new URL(req.url, 'http://x');
  const urlPath = decodeURIComponent(url.pathname);
  if (urlPath === '/__fail') {
    fail = url.searchParams.has('clear') ? null
      : { path: url.searchParams.get('path'), after: Number(url.searchParams.get('after')), sent: 0 };
    res.writeHead(200, { 'content-type': 'application/json', 'access-control-allow-origin': '*' });
    res.end(JSON.stringify(fail));
    return;
  }
  if (urlPath === '/__requests') {
    if (url.searchParams.has('reset')) counts.clear();
    const c = counts.get(url.searchParams.get('path') ?? '') ?? { head: 0, get: 0, range: 0, bytes: 0 };
    res.writeHead(200, { 'content-type': 'application/json', 'access-control-allow-origin': '*' });
    res.end(JSON.stringify(c));
    return;
  }
  if (req.method === 'OPTIONS' && cors) {
    // A preflight for a Range request from the test runner's origin.
    res.writeHead(204, {
      'access-control-allow-origin': '*',
      'access-control-allow-headers': 'range',
      'access-control-allow-methods': 'GET, HEAD',
    });
    res.end();
    return;
  }
  const ranges = !url.searchParams.has('norange');
  const file = resolve(urlPath);
  fs.stat(file ?? '', (err, st) => {
    if (err || !st.isFile()) {
      // With --cors the 404 is readable cross-origin too, so a page sees
      // the status rather than an opaque network error.
      res.writeHead(404, { 'content-type': 'text/plain', ...(cors ? { 'access-control-allow-origin': '*' } : {}) });
      res.end(`not found: ${urlPath}\n`);
      return;
    }
    const isolation = cors
      ? { 'access-control-allow-origin': '*', 'cross-origin-resource-policy': 'cross-origin' }
      : {
        'cross-origin-opener-policy': 'same-origin',
        'cross-origin-embedder-policy': 'require-corp',
        'cross-origin-resource-policy': 'same-origin',
      };
    const headers = {
      'content-type': types[path.extname(file)] || 'application/octet-stream',
      'cache-control': 'no-cache',
      etag: `"${st.size.toString(16)}-${Math.floor(st.mtimeMs).toString(16)}"`,
      'last-modified': st.mtime.toUTCString(),
      ...(ranges ? { 'accept-ranges': 'bytes' } : {}),
      ...(cors ? { 'access-control-expose-headers': 'content-length, content-range, accept-ranges, etag, last-modified' } : {}),
      ...isolation,
    };
    const m = ranges && /^bytes=(\d+)-(\d*)$/.exec(req.headers.range ?? '');
    if (m) {
      const start = Number(m[1]);
      const end = m[2] === '' ? st.size - 1 : Math.min(Number(m[2]), st.size - 1);
      if (start >= st.size || end < start) {
        res.writeHead(416, { ...headers, 'content-range': `bytes */${st.size}` });
        res.end();
        return;
      }
      count(urlPath, 'range', end - start + 1);
      res.writeHead(206, {
        ...headers,
        'content-length': end - start + 1,
        'content-range': `bytes ${start}-${end}/${st.size}`,
      });
      send(res, file, urlPath, start, end);
      return;
    }
    count(urlPath, req.method === 'HEAD' ? 'head' : 'get', req.method === 'HEAD' ? 0 : st.size);
    res.writeHead(200, { ...headers, 'content-length': st.size });
    if (req.method === 'HEAD') return res.end();
    send(res, file, urlPath, 0, st.size - 1);
  });
});
server.listen(port, '127.0.0.1', () => {
  console.log(`webgguf demo: http://127.0.0.1:${server.address().port}/`);
});
