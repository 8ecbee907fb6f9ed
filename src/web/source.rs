//! Where the browser reads a model from: bytes in memory, a `Blob` or
//! `File`, a `ReadableStream`, or a URL through the cache (cache.js: HTTP
//! Range requests in parallel, verified chunks kept in the origin's
//! storage). Each is a `Source` of random-access reads for the loaders,
//! plus `WasmModel.cache` to list and drop what the cache holds.

use js_sys::{Array, Function, Promise, Reflect, Uint8Array};
use sha2::{Digest, Sha256};
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use wasm_bindgen_futures::JsFuture;

use crate::engine::LocalFuture;
use crate::error::{Error, Result};
use crate::source::{Concat, Source};

#[wasm_bindgen(inline_js = r#"
// Bytes, a Blob or a stream as random-access reads: { kind, len,
// read(offset, n) -> Promise<Uint8Array> }. A stream is gathered into a
// Blob first (the browser may keep a large one on disk).
export async function open_local(input, signal) {
  const check = () => {
    if (signal && signal.aborted) throw new DOMException('the load was aborted', 'AbortError');
  };
  check();
  if (input instanceof ArrayBuffer) input = new Uint8Array(input);
  if (input instanceof Uint8Array) {
    return { kind: 'bytes', len: input.length, async read(a, n) { check(); return input.subarray(a, a + n); } };
  }
  if (typeof ReadableStream !== 'undefined' && input instanceof ReadableStream) {
    input = await new Response(input).blob();
  }
  if (typeof Blob !== 'undefined' && input instanceof Blob) {
    const blob = input;
    return {
      kind: 'blob', len: blob.size,
      async read(a, n) { check(); return new Uint8Array(await blob.slice(a, a + n).arrayBuffer()); },
    };
  }
  throw new TypeError('the model must be a Uint8Array, ArrayBuffer, Blob, ReadableStream, URL string or URL');
}
export function url_string(input) {
  if (typeof input === 'string') return input;
  if (typeof URL !== 'undefined' && input instanceof URL) return input.href;
  return undefined;
}
"#)]
extern "C" {
    #[wasm_bindgen(catch)]
    fn open_local(input: &JsValue, signal: &JsValue) -> std::result::Result<Promise, JsValue>;
    fn url_string(input: &JsValue) -> Option<String>;
}

#[wasm_bindgen(module = "/src/web/cache.js")]
extern "C" {
    #[wasm_bindgen(catch)]
    fn open_url(url: &str, options: &JsValue) -> std::result::Result<Promise, JsValue>;
    fn cache_list() -> Promise;
    fn cache_delete(url: &str) -> Promise;
    fn cache_clear() -> Promise;
}

/// How a URL is read: the load's abort signal, and the cache options
/// (`cache`: true, false, 'opfs' or 'cache-api'; `maxCacheBytes`).
pub struct UrlOptions {
    pub signal: JsValue,
    pub cache: JsValue,
    pub max_cache_bytes: Option<f64>,
}

/// A model's bytes behind a JS source object of cache.js or `open_local`.
pub struct JsSource {
    obj: JsValue,
    read: Function,
    /// 'bytes', 'blob', 'url' (network only) or 'url-cached'.
    pub kind: String,
    pub len: u64,
    /// The URL, for a source that is one.
    pub url: Option<String>,
}

impl JsSource {
    pub async fn open(input: &JsValue, o: &UrlOptions) -> Result<JsSource> {
        let url = url_string(input);
        let p = match &url {
            Some(u) => {
                let opts = crate::web::obj(&[
                    ("signal", o.signal.clone()),
                    ("cache", o.cache.clone()),
                    (
                        "maxCacheBytes",
                        o.max_cache_bytes.map_or(JsValue::UNDEFINED, JsValue::from),
                    ),
                ]);
                open_url(u, &opts)
            }
            None => open_local(input, &o.signal),
        }
        .map_err(read_error)?;
        let obj = JsFuture::from(p).await.map_err(read_error)?;
        let field = |k: &str| Reflect::get(&obj, &k.into()).unwrap_or(JsValue::UNDEFINED);
        let len = field("len").as_f64().filter(|l| *l >= 0.0).unwrap_or(0.0) as u64;
        Ok(JsSource {
            read: field("read").unchecked_into(),
            kind: field("kind").as_string().unwrap_or_default(),
            obj,
            len,
            url,
        })
    }

    fn field(&self, k: &str) -> JsValue {
        Reflect::get(&self.obj, &k.into()).unwrap_or(JsValue::UNDEFINED)
    }

    /// What the cache did for this load (`ModelInfo.cache`), or null for a
    /// source that is not a URL.
    pub fn cache_info(&self) -> JsValue {
        match self.field("cacheInfo").dyn_into::<Function>() {
            Ok(f) => f.call0(&self.obj).unwrap_or(JsValue::NULL),
            Err(_) => JsValue::NULL,
        }
    }

    /// Bytes the cache already holds for this URL when it was opened.
    pub fn cached_bytes(&self) -> u64 {
        self.field("cachedBytes").as_f64().unwrap_or(0.0) as u64
    }

    /// Check the whole file against `want` (lowercase hex SHA-256) before
    /// anything parses it, reading it in order with `ahead` reads in flight.
    /// A cache entry already verified against `want` is not hashed again
    /// (each chunk is still checked when read); a mismatch drops the entry.
    pub async fn verify_sha256(
        &self,
        want: &str,
        ahead: usize,
        progress: &dyn Fn(u64),
    ) -> Result<()> {
        if self.field("verified").as_string().as_deref() == Some(want) {
            return Ok(());
        }
        let mut h = Sha256::new();
        read_in_order(self, ahead, &mut |bytes, done| {
            h.update(bytes);
            progress(done);
        })
        .await?;
        let got: String = h.finalize().iter().map(|b| format!("{b:02x}")).collect();
        let what = self.url.as_deref().unwrap_or("the model");
        if got != want {
            if let Some(u) = &self.url {
                let _ = JsFuture::from(cache_delete(u)).await;
            }
            return Err(Error::Checksum(format!(
                "{what} has SHA-256 {got}, but {want} was expected; it was not loaded (and not kept in the cache)"
            )));
        }
        if let Ok(f) = self.field("markVerified").dyn_into::<Function>() {
            if let Ok(p) = f.call1(&self.obj, &want.into()) {
                let _ = JsFuture::from(Promise::resolve(&p)).await;
            }
        }
        Ok(())
    }
}

impl Source for JsSource {
    fn len(&self) -> u64 {
        self.len
    }
    fn read(&self, offset: u64, len: usize) -> LocalFuture<'_, Result<Vec<u8>>> {
        // The request starts now, not when the future is first polled, so
        // that a loader holding several reads gets them in parallel.
        let p = self
            .read
            .call2(&self.obj, &(offset as f64).into(), &(len as f64).into());
        Box::pin(async move {
            let p = p.map_err(read_error)?;
            let v = JsFuture::from(Promise::resolve(&p))
                .await
                .map_err(read_error)?;
            let a: Uint8Array = v
                .dyn_into()
                .map_err(|_| Error::Io("a source read gave no bytes".into()))?;
            Ok(a.to_vec())
        })
    }
}

/// A failed or aborted read as an engine error.
fn read_error(e: JsValue) -> Error {
    let name = Reflect::get(&e, &"name".into())
        .ok()
        .and_then(|n| n.as_string());
    if name.as_deref() == Some("AbortError") {
        return Error::Aborted;
    }
    let msg = Reflect::get(&e, &"message".into())
        .ok()
        .and_then(|m| m.as_string())
        .unwrap_or_else(|| format!("{e:?}"));
    if name.as_deref() == Some("TypeError") && msg.starts_with("the model must be") {
        return Error::InvalidArgument(msg);
    }
    Error::Io(msg)
}

/// A model's files: one, or the files of a split model in order
/// (llama.cpp's `NAME-00001-of-0000N.gguf`...), read as one source.
pub type Files = Concat<JsSource>;

/// Open `input`: one model source, or an array of them for a split model.
pub async fn open_files(input: &JsValue, o: &UrlOptions) -> Result<Files> {
    let items: Vec<JsValue> = if Array::is_array(input) {
        Array::from(input).iter().collect()
    } else {
        vec![input.clone()]
    };
    let n = items.len();
    let (mut parts, mut names) = (Vec::with_capacity(n), Vec::with_capacity(n));
    for (i, item) in items.iter().enumerate() {
        let src = JsSource::open(item, o).await?;
        names.push(
            src.url
                .clone()
                .unwrap_or_else(|| format!("file {} of {n}", i + 1)),
        );
        parts.push(src);
    }
    Ok(Concat::new(parts)?.with_names(names))
}

/// What the cache did for `files`: one file's `CacheInfo` (null when it
/// is not a URL), or one per file of a split model.
pub fn cache_info(files: &Files) -> JsValue {
    match files.parts() {
        [one] => one.cache_info(),
        many => many
            .iter()
            .map(JsSource::cache_info)
            .collect::<Array>()
            .into(),
    }
}

/// Read all of `src` into wasm memory in slices, after checking that it
/// fits: a model larger than wasm32 can address is an error before any
/// byte is read.
pub async fn read_all(src: &dyn Source, ahead: usize, progress: &dyn Fn(u64)) -> Result<Vec<u8>> {
    let too_big = || {
        Error::InvalidArgument(format!(
            "the model file ({} MiB) does not fit in WebAssembly memory, so the CPU backend \
             cannot run it (WebGPU streams it instead)",
            src.len() >> 20
        ))
    };
    let len = usize::try_from(src.len()).map_err(|_| too_big())?;
    let mut v = Vec::new();
    v.try_reserve_exact(len).map_err(|_| too_big())?;
    read_in_order(src, ahead, &mut |bytes, done| {
        v.extend_from_slice(bytes);
        progress(done);
    })
    .await?;
    Ok(v)
}

/// Hand all of `src` to `each` in order, in slices of 16 MiB, with `ahead`
/// reads in flight (a URL's range requests run in parallel); `each` also
/// hears the bytes done so far.
async fn read_in_order(
    src: &dyn Source,
    ahead: usize,
    each: &mut dyn FnMut(&[u8], u64),
) -> Result<()> {
    const SLICE: u64 = 16 << 20;
    let len = src.len();
    let (mut next, mut done) = (0u64, 0u64);
    let mut pending = std::collections::VecDeque::new();
    while done < len {
        while pending.len() < ahead.max(1) && next < len {
            let n = SLICE.min(len - next) as usize;
            pending.push_back((n, src.read(next, n)));
            next += n as u64;
        }
        let Some((n, read)) = pending.pop_front() else {
            break;
        };
        let bytes = read.await?;
        if bytes.len() != n {
            return Err(Error::Truncated(format!(
                "the source gave {} bytes of the {n} asked for",
                bytes.len()
            )));
        }
        done += n as u64;
        each(&bytes, done);
        crate::web::yield_to_event_loop().await;
    }
    Ok(())
}

/// The model cache of this origin (`WasmModel.cache`): what is kept, by
/// URL, and how to drop it.
#[wasm_bindgen]
pub struct ModelCache {}

#[wasm_bindgen]
impl ModelCache {
    /// The entries: `{ url, bytes, length, complete, validator, sha256,
    /// created, store }`; `bytes` below `length` is a download to resume.
    #[wasm_bindgen(unchecked_return_type = "Promise<CacheEntry[]>")]
    pub fn list(&self) -> Promise {
        cache_list()
    }
    /// Drop every entry of `url`; resolves to the bytes freed.
    #[wasm_bindgen(unchecked_return_type = "Promise<number>")]
    pub fn delete(&self, url: &str) -> Promise {
        cache_delete(url)
    }
    /// Drop every entry; resolves to the bytes freed.
    #[wasm_bindgen(unchecked_return_type = "Promise<number>")]
    pub fn clear(&self) -> Promise {
        cache_clear()
    }
}
