// The model cache: a URL's bytes kept in this origin's storage, in verified
// chunks, so that a second visit loads without downloading and an
// interrupted download resumes where it stopped.
//
// An entry is keyed by the URL, the server's validator (ETag, else
// Last-Modified) and the length, so a changed file is a new entry (the old
// one is dropped when the new one starts). It holds a meta record and one
// record per chunk of CHUNK bytes, named by its index and the SHA-256 of its
// bytes. A chunk record is written whole, only after its bytes arrived whole,
// so what is stored is always a set of complete chunks: resuming fetches the
// missing ones. Every chunk read back is hashed again and its length checked;
// a corrupted or truncated one is dropped and fetched again, never handed to
// the parser.
//
// Two stores with one interface: the Origin Private File System (a directory
// per entry, a file per chunk), and the Cache API where OPFS cannot write
// from this context (Safari's main thread, for one).
//
// Used by web.rs: open_url() gives the loader a source { kind, len, read }
// and cache_list/cache_delete/cache_clear back `WasmModel.cache`.

const CHUNK = 4 << 20;
const DIR = 'webgguf-cache';
const CACHE_NAME = 'webgguf-cache-v1';
const CACHE_KEY = 'https://webgguf.invalid/';
// Chunks kept in JS memory after they are read: the loader's reads are not
// aligned to chunks, so consecutive reads share one (read-ahead keeps up to
// 32 reads of 8 MiB in flight; most keep 4).
const KEEP = 12;

function cacheError(code, message) {
  const e = new Error(message);
  e.code = code;
  return e;
}

function isQuota(e) {
  return e && (e.name === 'QuotaExceededError' || e.code === 'QuotaExceeded');
}

async function sha256Hex(bytes) {
  const d = new Uint8Array(await crypto.subtle.digest('SHA-256', bytes));
  return Array.from(d, (b) => b.toString(16).padStart(2, '0')).join('');
}

// ---- stores -----------------------------------------------------------

// OPFS: DIR/<id>/meta.json and DIR/<id>/<index>.<sha256>.
class OpfsStore {
  constructor(dir) { this.dir = dir; this.name = 'opfs'; }
  static async open() {
    if (!(navigator.storage && navigator.storage.getDirectory)) throw new Error('no OPFS');
    if (typeof FileSystemFileHandle === 'undefined' || !FileSystemFileHandle.prototype.createWritable) {
      throw new Error('OPFS cannot write files from this context');
    }
    const root = await navigator.storage.getDirectory();
    return new OpfsStore(await root.getDirectoryHandle(DIR, { create: true }));
  }
  async entry(id, create) {
    try { return await this.dir.getDirectoryHandle(id, { create }); } catch (e) {
      if (e.name === 'NotFoundError') return null;
      throw e;
    }
  }
  async ids() {
    const out = [];
    for await (const [name, h] of this.dir.entries()) if (h.kind === 'directory') out.push(name);
    return out;
  }
  async readMeta(id) {
    const d = await this.entry(id, false);
    if (!d) return null;
    try { return JSON.parse(await (await (await d.getFileHandle('meta.json')).getFile()).text()); } catch { return null; }
  }
  async writeMeta(id, meta) {
    await this.write(await this.entry(id, true), 'meta.json', JSON.stringify(meta));
  }
  // index -> { hash, size } of the chunks stored.
  async chunks(id) {
    const out = new Map();
    const d = await this.entry(id, false);
    if (!d) return out;
    for await (const [name, h] of d.entries()) {
      const m = /^(\d+)\.([0-9a-f]{64})$/.exec(name);
      if (m && h.kind === 'file') out.set(Number(m[1]), { hash: m[2], size: (await h.getFile()).size });
    }
    return out;
  }
  async readChunk(id, i, hash) {
    const d = await this.entry(id, false);
    const f = await (await d.getFileHandle(`${i}.${hash}`)).getFile();
    return new Uint8Array(await f.arrayBuffer());
  }
  async writeChunk(id, i, hash, bytes) {
    await this.write(await this.entry(id, true), `${i}.${hash}`, bytes);
  }
  async deleteChunk(id, i, hash) {
    const d = await this.entry(id, false);
    if (d) await d.removeEntry(`${i}.${hash}`).catch(() => {});
  }
  async remove(id) {
    await this.dir.removeEntry(id, { recursive: true }).catch((e) => {
      if (e.name !== 'NotFoundError') throw e;
    });
  }
  // A writable stream commits on close(): a file is whole or absent.
  async write(dir, name, data) {
    const w = await (await dir.getFileHandle(name, { create: true })).createWritable();
    try { await w.write(data); } catch (e) { await w.abort().catch(() => {}); throw e; }
    await w.close();
  }
}

// Cache API: <CACHE_KEY><id>/meta and <CACHE_KEY><id>/<index>, the chunk's
// hash in a header.
class CacheApiStore {
  constructor(cache) { this.cache = cache; this.name = 'cache-api'; }
  static async open() {
    if (typeof caches === 'undefined') throw new Error('no Cache API');
    return new CacheApiStore(await caches.open(CACHE_NAME));
  }
  key(id, part) { return `${CACHE_KEY}${id}/${part}`; }
  async ids() {
    const ids = new Set();
    for (const r of await this.cache.keys()) {
      const m = /\/([0-9a-f]+)\/meta$/.exec(r.url);
      if (m) ids.add(m[1]);
    }
    return [...ids];
  }
  async readMeta(id) {
    const r = await this.cache.match(this.key(id, 'meta'));
    return r ? r.json().catch(() => null) : null;
  }
  async writeMeta(id, meta) {
    await this.cache.put(this.key(id, 'meta'), new Response(JSON.stringify(meta)));
  }
  async chunks(id) {
    const out = new Map();
    const prefix = this.key(id, '');
    for (const r of await this.cache.keys()) {
      if (!r.url.startsWith(prefix)) continue;
      const i = r.url.slice(prefix.length);
      if (!/^\d+$/.test(i)) continue;
      const res = await this.cache.match(r);
      const hash = res && res.headers.get('x-sha256');
      if (hash) out.set(Number(i), { hash, size: Number(res.headers.get('x-size')) });
    }
    return out;
  }
  async readChunk(id, i, hash) {
    const r = await this.cache.match(this.key(id, i));
    if (!r || r.headers.get('x-sha256') !== hash) throw new Error('chunk missing');
    return new Uint8Array(await r.arrayBuffer());
  }
  async writeChunk(id, i, hash, bytes) {
    await this.cache.put(this.key(id, i), new Response(bytes, {
      headers: { 'x-sha256': hash, 'x-size': String(bytes.length) },
    }));
  }
  async deleteChunk(id, i) { await this.cache.delete(this.key(id, i)); }
  async remove(id) {
    const prefix = this.key(id, '');
    for (const r of await this.cache.keys()) if (r.url.startsWith(prefix)) await this.cache.delete(r);
  }
}

// 'opfs', 'cache-api', or true for the first that works here.
async function openStore(which) {
  if (which === 'opfs') return OpfsStore.open();
  if (which === 'cache-api') return CacheApiStore.open();
  try { return await OpfsStore.open(); } catch { return CacheApiStore.open(); }
}

async function allStores() {
  const out = [];
  for (const open of [OpfsStore.open, CacheApiStore.open]) {
    try { out.push(await open()); } catch { /* not in this context */ }
  }
  return out;
}

// Every entry of `stores` that has its meta record: { store, id, meta }.
async function entries(stores) {
  const out = [];
  for (const store of stores) {
    for (const id of await store.ids()) {
      const meta = await store.readMeta(id);
      if (meta) out.push({ store, id, meta });
    }
  }
  return out;
}

async function entryId(url, validator, len) {
  return (await sha256Hex(new TextEncoder().encode(`${url}\n${validator}\n${len}`))).slice(0, 32);
}

async function entryBytes(store, id) {
  let n = 0;
  for (const c of (await store.chunks(id)).values()) n += c.size;
  return n;
}

// ---- the management API (WasmModel.cache) ------------------------------

export async function cache_list() {
  const out = [];
  for (const { store, id, meta } of await entries(await allStores())) {
    const bytes = await entryBytes(store, id);
    out.push({
      url: meta.url, bytes, length: meta.length, complete: bytes === meta.length,
      validator: meta.validator, sha256: meta.sha256 ?? null, created: meta.created, store: store.name,
    });
  }
  return out;
}

// Drops every entry of `url`; returns the bytes freed.
export async function cache_delete(url) {
  let freed = 0;
  for (const { store, id, meta } of await entries(await allStores())) {
    if (meta.url !== String(url)) continue;
    freed += await entryBytes(store, id);
    await store.remove(id);
  }
  return freed;
}

export async function cache_clear() {
  let freed = 0;
  for (const store of await allStores()) {
    for (const id of await store.ids()) {
      freed += await entryBytes(store, id);
      await store.remove(id);
    }
  }
  return freed;
}

// ---- reading a URL -----------------------------------------------------
//
// Every request bypasses the browser's HTTP cache ('no-store'): this cache
// is the model's one stored copy, and Chromium's HTTP cache, given
// concurrent range requests of one URL, serializes them on its entry and
// sends some twice.

// The network side of a URL: get(a, n) with Range requests, or, for a
// server without them, one GET into a Blob (made once, on the first need).
function network(url, len, ranges, signal, pre) {
  if (ranges) {
    return async (a, n) => {
      const r = await fetch(url, { headers: { Range: `bytes=${a}-${a + n - 1}` }, signal, cache: 'no-store' });
      if (r.status !== 206) throw new Error(`${url}: a range request got HTTP ${r.status}`);
      const b = new Uint8Array(await r.arrayBuffer());
      if (b.length !== n) throw new Error(`${url}: ${b.length} bytes for a range of ${n}`);
      return b;
    };
  }
  let whole = pre ? Promise.resolve(pre) : null;
  return async (a, n) => {
    if (!whole) {
      whole = fetch(url, { signal, cache: 'no-store' }).then(async (r) => {
        if (!r.ok) throw new Error(`${url}: HTTP ${r.status}`);
        return r.blob();
      });
      whole.catch(() => { whole = null; });
    }
    const blob = await whole;
    if (blob.size !== len) throw new Error(`${url}: ${blob.size} bytes, but the length was ${len}`);
    return new Uint8Array(await blob.slice(a, a + n).arrayBuffer());
  };
}

// Open `url` for reading. options: { signal, cache: boolean | 'opfs' |
// 'cache-api', maxCacheBytes }. The source's cacheInfo() says what the
// cache did: { status: 'hit' | 'partial' | 'miss' | 'off', store, fromCache,
// fromNetwork, refetched, reason, error }.
export async function open_url(url, options) {
  const { signal } = options;
  const check = () => {
    if (signal && signal.aborted) throw new DOMException('the load was aborted', 'AbortError');
  };
  const want = options.cache ?? true;
  let head = null;
  let offline = null;
  try {
    head = await fetch(url, { method: 'HEAD', signal, cache: 'no-store' });
  } catch (e) {
    if (e && e.name === 'AbortError') throw e;
    offline = e;
  }
  const info = { status: 'off', store: null, fromCache: 0, fromNetwork: 0, refetched: 0, reason: null, error: null };
  let len, ranges, validator;
  if (head) {
    if (!head.ok) throw new Error(`${url}: HTTP ${head.status}`);
    len = Number(head.headers.get('content-length') || 0);
    ranges = head.headers.get('accept-ranges') === 'bytes' && len > 0;
    validator = head.headers.get('etag') || head.headers.get('last-modified');
  }
  let pre = null;
  if (head && !(len > 0)) {
    // No length: the file is read whole first (one stream), then cut.
    const r = await fetch(url, { signal, cache: 'no-store' });
    if (!r.ok) throw new Error(`${url}: HTTP ${r.status}`);
    pre = await r.blob();
    len = pre.size;
  }

  let store = null;
  let id = null;
  let have = new Map();
  let writable = false;
  let meta = null;
  if (want) {
    try {
      store = await openStore(want);
      if (offline) {
        // No network: a complete entry of this URL still loads.
        for (const e of await entries([store])) {
          if (e.meta.url === url && (await entryBytes(store, e.id)) === e.meta.length) {
            ({ id, meta } = e); len = meta.length; break;
          }
        }
      } else if (!validator) {
        info.reason = 'the server sends no ETag or Last-Modified, so a cached copy could not be checked for freshness';
        store = null;
      } else {
        id = await entryId(url, validator, len);
        meta = await store.readMeta(id);
      }
    } catch (e) {
      info.reason = `no cache store: ${e && e.message}`;
      store = null;
    }
  }
  if (offline && !meta) {
    throw new Error(`${url}: ${offline && offline.message} (unreachable, or the server does not allow cross-origin requests)`);
  }
  if (store && id) {
    info.store = store.name;
    have = await store.chunks(id);
    writable = !offline;
    if (!meta) {
      // A new entry: an older one of the same URL is stale now.
      for (const e of await entries([store])) if (e.meta.url === url) await store.remove(e.id);
      meta = { url, validator, length: len, chunk: CHUNK, created: Date.now() };
    }
    if (meta.chunk !== CHUNK) { await store.remove(id); have = new Map(); meta.chunk = CHUNK; }
    // Room for the rest of the file, before any byte is fetched.
    let cached = 0;
    for (const c of have.values()) cached += c.size;
    const need = len - cached;
    let room = Infinity;
    try {
      const est = await navigator.storage.estimate();
      room = est.quota - est.usage;
    } catch { /* no estimate: find out on write */ }
    let others = 0;
    if (options.maxCacheBytes != null) {
      for (const e of await cache_list()) if (e.url !== url) others += e.bytes;
      room = Math.min(room, options.maxCacheBytes - others - cached);
    }
    if (writable && need > room) {
      writable = false;
      info.error = cacheError('QuotaExceeded', `the cache has room for ${Math.max(0, Math.floor(room / 2 ** 20))} MiB, ` +
        `and ${url} needs ${Math.ceil(need / 2 ** 20)} MiB more` +
        (options.maxCacheBytes != null ? ` (maxCacheBytes ${options.maxCacheBytes}; cached by others: ${others})` : '') +
        '; the model loads without caching (free room with WasmModel.cache.delete(url) or .clear())');
    }
    if (writable) await store.writeMeta(id, meta);
    else if (have.size === 0) { store = null; info.store = null; }
  }

  const net = offline ? null : network(url, len, ranges, signal, pre);
  const chunkCount = Math.ceil(len / CHUNK);
  const kept = new Map(); // index -> Promise<Uint8Array>, most recent last

  async function fetchChunk(i) {
    const size = Math.min(CHUNK, len - i * CHUNK);
    const stored = store && have.get(i);
    if (stored) {
      let bytes = null;
      try { bytes = await store.readChunk(id, i, stored.hash); } catch { /* unreadable: fetch again */ }
      if (bytes && bytes.length === size && (await sha256Hex(bytes)) === stored.hash) {
        info.fromCache += size;
        return bytes;
      }
      info.refetched++;
      have.delete(i);
      await store.deleteChunk(id, i, stored.hash).catch(() => {});
    }
    check();
    if (!net) throw new Error(`${url}: offline, and the cached copy lacks bytes ${i * CHUNK}+${size}`);
    const bytes = await net(i * CHUNK, size);
    info.fromNetwork += size;
    if (writable) {
      try {
        const hash = await sha256Hex(bytes);
        await store.writeChunk(id, i, hash, bytes);
        have.set(i, { hash, size });
      } catch (e) {
        writable = false;
        info.error = isQuota(e)
          ? cacheError('QuotaExceeded', `the browser's storage quota ran out while caching ${url}; the model loads without caching (free room with WasmModel.cache.delete(url) or .clear())`)
          : cacheError('CacheError', `caching ${url} failed: ${e && e.message}; the model loads without caching`);
        if (isQuota(e)) await store.remove(id).catch(() => {});
      }
    }
    return bytes;
  }

  function chunk(i) {
    let p = kept.get(i);
    if (p) { kept.delete(i); kept.set(i, p); return p; }
    p = fetchChunk(i);
    p.catch(() => kept.delete(i));
    kept.set(i, p);
    while (kept.size > KEEP) kept.delete(kept.keys().next().value);
    return p;
  }

  let cachedBytes = 0;
  for (const c of have.values()) cachedBytes += c.size;
  return {
    kind: store ? 'url-cached' : 'url',
    len,
    cachedBytes,
    async read(a, n) {
      check();
      // Uncached, a read is one request of exactly its bytes.
      if (!store) {
        if (!net) throw new Error(`${url}: offline`);
        const b = await net(a, n);
        info.fromNetwork += n;
        return b;
      }
      const first = Math.floor(a / CHUNK);
      const last = Math.min(chunkCount - 1, Math.floor((a + n - 1) / CHUNK));
      const parts = [];
      for (let i = first; i <= last; i++) parts.push(chunk(i));
      const out = new Uint8Array(n);
      for (let i = first; i <= last; i++) {
        const c = await parts[i - first];
        const from = Math.max(a, i * CHUNK);
        const to = Math.min(a + n, i * CHUNK + c.length);
        out.set(c.subarray(from - i * CHUNK, to - i * CHUNK), from - a);
      }
      return out;
    },
    cacheInfo() {
      // By what the cache held when the load began (a chunk read twice in
      // one load is read back from the cache the second time).
      const status = !store ? 'off' : info.fromNetwork === 0 ? 'hit' : cachedBytes === 0 ? 'miss' : 'partial';
      return { ...info, status };
    },
    // The whole file matched the caller's sha256: later loads need not hash it again.
    async markVerified(sha) {
      if (store && writable && meta) { meta.sha256 = sha; await store.writeMeta(id, meta).catch(() => {}); }
    },
    verified: meta ? meta.sha256 ?? null : null,
  };
}
