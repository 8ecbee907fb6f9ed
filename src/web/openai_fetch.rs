//! `model.openaiFetch`: OpenAI's chat-completions endpoint served in
//! process, as a `fetch`-compatible function, so the `openai` npm client
//! (and anything else that takes a `fetch` and a base URL) drives the model
//! unchanged. Request checking and response shapes are in `crate::openai`;
//! this is the transport: Request/Response objects, server-sent events,
//! the abort signal, and the run itself (the same `Run` that `generate`
//! and `stream` use, so KV-cache reuse, Busy and abort behave the same).

use std::cell::RefCell;
use std::rc::Rc;

use js_sys::{Function, Promise, Reflect};
use wasm_bindgen::closure::Closure;
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use wasm_bindgen_futures::future_to_promise;

use super::{js_error, GenSettings, Run, Shared, WasmModel};
use crate::error::{Error, Result};
use crate::openai::{self, ApiError, Prepared, ToolMode};

#[wasm_bindgen(inline_js = r#"
export function make_openai_fetch(handler) {
  return async function openaiFetch(input, init) {
    const isRequest = typeof Request !== 'undefined' && input instanceof Request;
    const url = isRequest ? input.url : String(input instanceof URL ? input.href : input);
    const method = String((init && init.method) || (isRequest ? input.method : 'GET')).toUpperCase();
    let body = init && init.body != null ? init.body : (isRequest ? await input.text() : null);
    if (body != null && typeof body !== 'string') body = await new Response(body).text();
    const signal = (init && init.signal) || (isRequest ? input.signal : null) || null;
    if (signal && signal.aborted) {
      throw signal.reason ?? new DOMException('The operation was aborted.', 'AbortError');
    }
    return handler(method, url, body, signal);
  };
}
// x-should-retry: the openai client retries 409/429/5xx by default; an
// answer from an in-process model will not change on a retry.
export function json_response(status, body) {
  return new Response(body, {
    status,
    headers: { 'content-type': 'application/json', 'x-should-retry': 'false' },
  });
}
export function sleep_ms(ms) { return new Promise((resolve) => setTimeout(resolve, ms)); }
export function sse_response(pull, cancel) {
  const enc = new TextEncoder();
  const stream = new ReadableStream({
    async pull(ctrl) {
      try {
        const s = await pull();
        if (s == null) ctrl.close(); else ctrl.enqueue(enc.encode(s));
      } catch (e) {
        ctrl.error(e);
      }
    },
    cancel() { cancel(); },
  });
  return new Response(stream, {
    status: 200,
    headers: { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' },
  });
}
"#)]
extern "C" {
    fn make_openai_fetch(handler: &JsValue) -> Function;
    fn json_response(status: u16, body: &str) -> JsValue;
    fn sse_response(pull: &JsValue, cancel: &JsValue) -> JsValue;
    fn sleep_ms(ms: u32) -> Promise;
}

/// How long a request waits for a generation that is winding down (one
/// just aborted finishes its current token first) before it is refused as
/// Busy.
const BUSY_GRACE_MS: f64 = 1000.0;

#[wasm_bindgen(typescript_custom_section)]
const TS_OPENAI: &'static str = r#"
/**
 * A `fetch` serving OpenAI's `POST /v1/chat/completions` and `GET /v1/models`
 * in process (any origin; the path decides). Pass it to the `openai` client
 * with `baseURL: 'http://webgguf.local/v1'`.
 */
export type OpenAIFetch = (input: string | URL | Request, init?: RequestInit) => Promise<Response>;
"#;

#[wasm_bindgen]
impl WasmModel {
    /// OpenAI's chat-completions API over this model, as a `fetch`.
    #[wasm_bindgen(getter, js_name = openaiFetch, unchecked_return_type = "OpenAIFetch")]
    pub fn openai_fetch(&self) -> JsValue {
        let shared = self.shared.clone();
        let handler = Closure::<dyn FnMut(String, String, JsValue, JsValue) -> Promise>::new(
            move |method: String, url: String, body: JsValue, signal: JsValue| {
                handle(&shared, &method, &url, body.as_string(), signal)
            },
        );
        make_openai_fetch(&handler.into_js_value()).into()
    }
}

fn now_s() -> u64 {
    (js_sys::Date::now() / 1000.0) as u64
}

fn random_id(prefix: &str) -> String {
    let a = (js_sys::Math::random() * 2f64.powi(48)) as u64;
    format!("{prefix}{a:012x}")
}

fn error_response(e: &ApiError) -> Promise {
    Promise::resolve(&json_response(e.status, &e.body()))
}

fn handle(
    shared: &Rc<Shared>,
    method: &str,
    url: &str,
    body: Option<String>,
    signal: JsValue,
) -> Promise {
    // Only the path matters: any origin and base path ending in /v1.
    let path = url.split(['?', '#']).next().unwrap_or("");
    let path = path.trim_end_matches('/');
    if path.ends_with("/chat/completions") {
        if method != "POST" {
            return error_response(&not_allowed(method));
        }
        return chat(shared, body.unwrap_or_default(), signal);
    }
    if path.ends_with("/models") {
        if method != "GET" {
            return error_response(&not_allowed(method));
        }
        let body = openai::models(&model_name(shared), now_s());
        return Promise::resolve(&json_response(200, &body));
    }
    error_response(&ApiError {
        status: 404,
        message: format!(
            "no route {method} {path}: this endpoint serves /v1/chat/completions and /v1/models"
        ),
        kind: "invalid_request_error",
        param: None,
        code: Some("unknown_url".into()),
    })
}

fn not_allowed(method: &str) -> ApiError {
    ApiError {
        status: 405,
        message: format!("method {method} is not allowed here"),
        kind: "invalid_request_error",
        param: None,
        code: Some("method_not_allowed".into()),
    }
}

fn model_name(shared: &Shared) -> String {
    Reflect::get(&shared.info, &"name".into())
        .ok()
        .and_then(|v| v.as_string())
        .unwrap_or_else(|| "webgguf".into())
}

/// Check the request and start the run (so Busy is answered at once).
fn start(
    shared: &Rc<Shared>,
    body: &str,
    signal: JsValue,
) -> std::result::Result<(Run, Prepared), ApiError> {
    if shared.freed.get() {
        return Err(ApiError::from(&Error::InvalidArgument(
            "the model was freed".into(),
        )));
    }
    if shared.busy.get() {
        return Err(ApiError::from(&Error::Busy));
    }
    let template = shared.template.as_ref().map_err(ApiError::from)?;
    let context = shared
        .engine
        .try_borrow()
        .ok()
        .and_then(|e| e.as_ref().map(|e| e.context_len()))
        .ok_or_else(|| ApiError::from(&Error::Busy))?;
    let p = openai::prepare(body, template, context, shared.tokenizer.vocab_size())?;
    let mut params = p.params;
    if !p.seeded {
        params.seed = (js_sys::Math::random() * 2f64.powi(53)) as u64;
    }
    let signal = if signal.is_undefined() || signal.is_null() {
        None
    } else {
        Some(
            signal
                .dyn_into::<web_sys::AbortSignal>()
                .map_err(|_| ApiError::bad("signal", "signal must be an AbortSignal"))?,
        )
    };
    let settings = GenSettings {
        max_tokens: p.max_tokens,
        params,
        stop: p.stop.clone(),
        on_token: None,
        signal,
    };
    let run = Run::start(shared, &p.prompt, settings).map_err(|e| ApiError::from(&e))?;
    let setup = || -> Result<()> {
        let mut slot = shared.engine.try_borrow_mut().map_err(|_| Error::Busy)?;
        let engine = slot
            .as_mut()
            .ok_or_else(|| Error::InvalidArgument("the model was freed".into()))?;
        engine.sampling_extras(p.extras.clone())?;
        if let Some(g) = &p.grammar {
            engine.constrain(g)?;
        }
        Ok(())
    };
    if let Err(e) = setup() {
        run.end(false);
        let mut e = ApiError::from(&e);
        if p.grammar.is_some() && e.status == 400 {
            e.param = Some("response_format".into());
        }
        return Err(e);
    }
    Ok((run, p))
}

/// The logprobs entry of the token the run produced last.
fn logprob(shared: &Shared) -> Option<serde_json::Value> {
    let slot = shared.engine.try_borrow().ok()?;
    let lp = slot.as_ref()?.last_logprobs()?;
    Some(openai::logprob_entry(&shared.tokenizer, lp))
}

fn grammar_ms(shared: &Shared) -> f64 {
    shared
        .engine
        .try_borrow()
        .ok()
        .and_then(|e| e.as_ref().map(|e| e.last_grammar_ms))
        .unwrap_or(0.0)
}

fn chat(shared: &Rc<Shared>, body: String, signal: JsValue) -> Promise {
    let shared = shared.clone();
    future_to_promise(async move {
        let t0 = super::now_ms();
        while shared.busy.get() && super::now_ms() - t0 < BUSY_GRACE_MS {
            let _ = wasm_bindgen_futures::JsFuture::from(sleep_ms(10)).await;
        }
        let (run, p) = match start(&shared, &body, signal) {
            Ok(x) => x,
            Err(e) => return Ok(json_response(e.status, &e.body())),
        };
        if p.stream {
            return Ok(stream(run, p));
        }
        complete(run, p).await
    })
}

async fn complete(run: Run, p: Prepared) -> std::result::Result<JsValue, JsValue> {
    {
        let mut run = run;
        let mut lps = Vec::new();
        loop {
            match run.step().await {
                Ok(Some(_)) => {
                    if p.logprobs {
                        lps.extend(logprob(run.shared()));
                    }
                }
                Ok(None) => break,
                // An abort rejects the fetch as an aborted fetch does; other
                // failures are answered with a status.
                Err(Error::Aborted) => return Err(js_error(&Error::Aborted)),
                Err(e) => {
                    return Ok(json_response(
                        ApiError::from(&e).status,
                        &ApiError::from(&e).body(),
                    ))
                }
            }
        }
        let g = run.result.take().expect("the run finished");
        let a = openai::answer(&p, &run.emitted, g.stop);
        let usage = openai::usage(&g, grammar_ms(run.shared()));
        let body = openai::completion(
            &random_id("chatcmpl-"),
            now_s(),
            &p,
            &a,
            p.logprobs.then_some(lps),
            usage,
            &mut || random_id("call_"),
        );
        Ok(json_response(200, &body.to_string()))
    }
}

/// A streamed answer in progress.
struct Streaming {
    run: Run,
    p: Prepared,
    id: String,
    created: u64,
    started: bool,
}

fn stream(run: Run, p: Prepared) -> JsValue {
    let state = Rc::new(RefCell::new(Some(Streaming {
        run,
        p,
        id: random_id("chatcmpl-"),
        created: now_s(),
        started: false,
    })));
    // Set when the reader cancels the body; a pull in flight (which holds
    // the run outside `state`) then ends the run instead of keeping it.
    let cancelled = Rc::new(std::cell::Cell::new(false));
    let (st, gone) = (state.clone(), cancelled.clone());
    let pull = Closure::<dyn FnMut() -> Promise>::new(move || {
        let (st, gone) = (st.clone(), gone.clone());
        future_to_promise(async move {
            // Taken out for the await, so no RefCell borrow spans it.
            let Some(mut s) = st.borrow_mut().take() else {
                return Ok(JsValue::NULL);
            };
            match next_event(&mut s).await {
                Ok((text, done)) => {
                    if gone.get() {
                        s.run.end(false);
                    } else if !done {
                        *st.borrow_mut() = Some(s);
                    }
                    Ok(text.into())
                }
                Err(e) => Err(js_error(&e)),
            }
        })
    });
    let cancel = Closure::<dyn FnMut()>::new(move || {
        cancelled.set(true);
        if let Ok(mut slot) = state.try_borrow_mut() {
            if let Some(s) = slot.take() {
                s.run.end(false);
            }
        }
    });
    sse_response(&pull.into_js_value(), &cancel.into_js_value())
}

/// The next server-sent events of a stream, and whether it is over.
async fn next_event(s: &mut Streaming) -> Result<(String, bool)> {
    let model = s.p.model.clone();
    let chunk = |delta, finish, lp| openai::chunk(&s.id, s.created, &model, delta, finish, lp);
    if !s.started {
        s.started = true;
        return Ok((
            chunk(
                serde_json::json!({"role": "assistant", "content": ""}),
                None,
                None,
            ),
            false,
        ));
    }
    // With tools the reply is held until it can be read as calls or text.
    let hold = s.p.tools != ToolMode::None;
    while let Some((piece, _)) = s.run.step().await? {
        let lp = if s.p.logprobs {
            logprob(s.run.shared()).map(|e| vec![e])
        } else {
            None
        };
        if hold || (piece.is_empty() && lp.is_none()) {
            continue;
        }
        return Ok((
            chunk(serde_json::json!({"content": piece}), None, lp),
            false,
        ));
    }
    let g = s.run.result.take().expect("the run finished");
    let a = openai::answer(&s.p, &s.run.emitted, g.stop);
    let mut out = String::new();
    if !a.tool_calls.is_empty() {
        out += &chunk(
            openai::tool_calls_delta(&a.tool_calls, &mut || random_id("call_")),
            None,
            None,
        );
    } else if hold {
        out += &chunk(
            serde_json::json!({"content": a.content.clone().unwrap_or_default()}),
            None,
            None,
        );
    }
    out += &chunk(serde_json::json!({}), Some(a.finish), None);
    if s.p.include_usage {
        let usage = openai::usage(&g, grammar_ms(s.run.shared()));
        out += &openai::usage_chunk(&s.id, s.created, &model, usage);
    }
    out += "data: [DONE]\n\n";
    Ok((out, true))
}
