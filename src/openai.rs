//! OpenAI's chat-completions API over the engine, without the transport:
//! a request body (JSON) becomes a prompt, sampling settings and an optional
//! grammar ([`prepare`]); a finished generation becomes OpenAI's response
//! shapes ([`completion`], [`chunk`]). The browser shell (`web::openai_fetch`)
//! serves these over an in-process `fetch`; everything here is plain Rust so
//! it is tested natively.

use serde_json::{json, Map, Value};

use crate::chat::ChatTemplate;
use crate::engine::{Generation, StopReason};
use crate::error::Error;
use crate::grammar::GrammarSpec;
use crate::sampler::{Extras, SamplerParams, TokenLogprobs};
use crate::tokenizer::Tokenizer;

/// An error response: HTTP status and OpenAI's `{error: {...}}` body.
#[derive(Debug, Clone, PartialEq)]
pub struct ApiError {
    pub status: u16,
    pub message: String,
    pub kind: &'static str,
    pub param: Option<String>,
    pub code: Option<String>,
}

impl ApiError {
    pub fn bad(param: &str, message: impl Into<String>) -> ApiError {
        ApiError {
            status: 400,
            message: message.into(),
            kind: "invalid_request_error",
            param: Some(param.to_string()),
            code: None,
        }
    }

    pub fn body(&self) -> String {
        json!({"error": {
            "message": self.message,
            "type": self.kind,
            "param": self.param,
            "code": self.code,
        }})
        .to_string()
    }
}

impl From<&Error> for ApiError {
    fn from(e: &Error) -> ApiError {
        let (status, kind) = match e {
            Error::Busy => (409, "conflict_error"),
            Error::ContextOverflow { .. } | Error::InvalidArgument(_) | Error::BadToken { .. } => {
                (400, "invalid_request_error")
            }
            Error::ChatTemplate(_) => (400, "invalid_request_error"),
            _ => (500, "server_error"),
        };
        ApiError {
            status,
            message: e.to_string(),
            kind,
            param: match e {
                Error::ContextOverflow { .. } => Some("messages".into()),
                Error::ChatTemplate(_) => Some("messages".into()),
                _ => None,
            },
            code: Some(e.code().to_string()),
        }
    }
}

type Res<T> = std::result::Result<T, ApiError>;

/// How tools are offered and how the answer is read.
#[derive(Debug, Clone, PartialEq)]
pub enum ToolMode {
    /// No tools (none given, or `tool_choice: 'none'`).
    None,
    /// The model may call a tool; its text is parsed for calls.
    Auto,
    /// The model must call a tool (`required`, or a named one): the output
    /// is constrained to a `{"name", "arguments"}` object.
    Forced,
}

/// A request made ready for the engine.
#[derive(Debug, Clone)]
pub struct Prepared {
    pub prompt: String,
    pub max_tokens: usize,
    pub params: SamplerParams,
    pub extras: Extras,
    pub stop: Vec<String>,
    pub grammar: Option<GrammarSpec>,
    pub stream: bool,
    pub include_usage: bool,
    pub logprobs: bool,
    pub tools: ToolMode,
    pub model: String,
    /// Whether `seed` was given (else the shell draws one).
    pub seeded: bool,
}

fn num(body: &Map<String, Value>, key: &str) -> Res<Option<f64>> {
    match body.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(v) => v
            .as_f64()
            .filter(|x| x.is_finite())
            .map(Some)
            .ok_or_else(|| ApiError::bad(key, format!("{key} must be a number"))),
    }
}

fn ranged(body: &Map<String, Value>, key: &str, lo: f64, hi: f64) -> Res<Option<f64>> {
    match num(body, key)? {
        Some(x) if !(lo..=hi).contains(&x) => Err(ApiError::bad(
            key,
            format!("{key} must be between {lo} and {hi}, got {x}"),
        )),
        x => Ok(x),
    }
}

fn count(body: &Map<String, Value>, key: &str) -> Res<Option<u64>> {
    match body.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(v) => v
            .as_u64()
            .map(Some)
            .ok_or_else(|| ApiError::bad(key, format!("{key} must be a non-negative integer"))),
    }
}

fn flag(body: &Map<String, Value>, key: &str) -> Res<bool> {
    match body.get(key) {
        None | Some(Value::Null) => Ok(false),
        Some(Value::Bool(b)) => Ok(*b),
        Some(_) => Err(ApiError::bad(key, format!("{key} must be a boolean"))),
    }
}

/// The text of a message's `content`: a string, or an array of text parts.
fn content_text(v: Option<&Value>, param: &str) -> Res<String> {
    match v {
        None | Some(Value::Null) => Ok(String::new()),
        Some(Value::String(s)) => Ok(s.clone()),
        Some(Value::Array(parts)) => {
            let mut out = String::new();
            for (i, p) in parts.iter().enumerate() {
                match (p.get("type").and_then(Value::as_str), p.get("text")) {
                    (Some("text"), Some(Value::String(t))) => out.push_str(t),
                    _ => {
                        return Err(ApiError::bad(
                            &format!("{param}[{i}]"),
                            "only text content parts are supported",
                        ))
                    }
                }
            }
            Ok(out)
        }
        Some(_) => Err(ApiError::bad(
            param,
            "content must be a string or an array of text parts",
        )),
    }
}

/// A tool's name, description and parameter schema.
#[derive(Debug, Clone)]
struct Tool {
    name: String,
    parameters: Value,
    raw: Value,
}

fn tools_of(body: &Map<String, Value>) -> Res<Vec<Tool>> {
    let Some(v) = body.get("tools").filter(|v| !v.is_null()) else {
        return Ok(Vec::new());
    };
    let arr = v
        .as_array()
        .ok_or_else(|| ApiError::bad("tools", "tools must be an array"))?;
    arr.iter()
        .enumerate()
        .map(|(i, t)| {
            let param = format!("tools[{i}]");
            if t.get("type").and_then(Value::as_str) != Some("function") {
                return Err(ApiError::bad(
                    &param,
                    "only tools of type 'function' are supported",
                ));
            }
            let f = t
                .get("function")
                .ok_or_else(|| ApiError::bad(&param, "a tool needs a function"))?;
            let name = f
                .get("name")
                .and_then(Value::as_str)
                .filter(|n| !n.is_empty())
                .ok_or_else(|| {
                    ApiError::bad(&format!("{param}.function.name"), "a function needs a name")
                })?;
            let parameters = match f.get("parameters") {
                None | Some(Value::Null) => json!({"type": "object"}),
                Some(p @ Value::Object(_)) => p.clone(),
                Some(_) => {
                    return Err(ApiError::bad(
                        &format!("{param}.function.parameters"),
                        "parameters must be a JSON schema object",
                    ))
                }
            };
            Ok(Tool {
                name: name.to_string(),
                parameters,
                raw: t.clone(),
            })
        })
        .collect()
}

/// The schema of a forced call to one of `tools`.
fn call_schema(tools: &[&Tool]) -> Value {
    let one = |t: &Tool| {
        json!({
            "type": "object",
            "properties": {"name": {"const": t.name}, "arguments": t.parameters},
            "required": ["name", "arguments"],
            "additionalProperties": false,
        })
    };
    match tools {
        [t] => one(t),
        _ => json!({"anyOf": tools.iter().map(|t| one(t)).collect::<Vec<_>>()}),
    }
}

/// Read and check a request body. `context` is the model's context length
/// (the default and the ceiling of `max_tokens`).
pub fn prepare(body: &str, template: &ChatTemplate, context: usize, vocab: usize) -> Res<Prepared> {
    let v: Value = serde_json::from_str(body)
        .map_err(|e| ApiError::bad("body", format!("the body is not JSON: {e}")))?;
    let Value::Object(b) = v else {
        return Err(ApiError::bad("body", "the body must be a JSON object"));
    };
    let model = match b.get("model") {
        Some(Value::String(m)) => m.clone(),
        _ => return Err(ApiError::bad("model", "model must be a string")),
    };
    if let Some(n) = count(&b, "n")? {
        if n != 1 {
            return Err(ApiError::bad("n", "only n = 1 is supported"));
        }
    }
    // Sampling: OpenAI's defaults (temperature 1, top_p 1) and none of
    // llama.cpp's extra cuts (top-k, min-p), so the distribution is the one
    // OpenAI's parameters describe.
    let temperature = ranged(&b, "temperature", 0.0, 2.0)?.unwrap_or(1.0) as f32;
    let top_p = ranged(&b, "top_p", 0.0, 1.0)?.unwrap_or(1.0) as f32;
    if top_p <= 0.0 {
        return Err(ApiError::bad("top_p", "top_p must be greater than 0"));
    }
    let seed = match b.get("seed") {
        None | Some(Value::Null) => None,
        Some(v) => Some(
            v.as_i64()
                .ok_or_else(|| ApiError::bad("seed", "seed must be an integer"))?
                as u64,
        ),
    };
    let params = SamplerParams {
        temperature,
        top_k: 0,
        top_p,
        min_p: 0.0,
        repeat_penalty: 1.0,
        seed: seed.unwrap_or(0),
        ..SamplerParams::default()
    };
    let frequency = ranged(&b, "frequency_penalty", -2.0, 2.0)?.unwrap_or(0.0) as f32;
    let presence = ranged(&b, "presence_penalty", -2.0, 2.0)?.unwrap_or(0.0) as f32;
    let mut bias = Vec::new();
    if let Some(lb) = b.get("logit_bias").filter(|v| !v.is_null()) {
        let m = lb
            .as_object()
            .ok_or_else(|| ApiError::bad("logit_bias", "logit_bias must be an object"))?;
        for (k, v) in m {
            let id: u32 = k
                .parse()
                .ok()
                .filter(|&id: &u32| (id as usize) < vocab)
                .ok_or_else(|| {
                    ApiError::bad(
                        "logit_bias",
                        format!("{k:?} is not a token id below {vocab}"),
                    )
                })?;
            let x = v
                .as_f64()
                .filter(|x| (-100.0..=100.0).contains(x))
                .ok_or_else(|| {
                    ApiError::bad("logit_bias", "biases must be numbers in [-100, 100]")
                })?;
            // -100 bans a token outright, as OpenAI documents.
            bias.push((
                id,
                if x <= -100.0 {
                    f32::NEG_INFINITY
                } else {
                    x as f32
                },
            ));
        }
    }
    let logprobs = flag(&b, "logprobs")?;
    let top_logprobs = count(&b, "top_logprobs")?;
    if let Some(k) = top_logprobs {
        if k > 20 {
            return Err(ApiError::bad(
                "top_logprobs",
                "top_logprobs must be at most 20",
            ));
        }
        if !logprobs {
            return Err(ApiError::bad(
                "top_logprobs",
                "top_logprobs needs logprobs: true",
            ));
        }
    }
    let max_tokens = match (
        count(&b, "max_completion_tokens")?,
        count(&b, "max_tokens")?,
    ) {
        (Some(m), _) | (None, Some(m)) => m.min(context as u64) as usize,
        (None, None) => context,
    };
    let stop = match b.get("stop") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::String(s)) => vec![s.clone()],
        Some(Value::Array(a)) if a.len() <= 4 && a.iter().all(Value::is_string) => a
            .iter()
            .filter_map(|s| s.as_str().map(str::to_string))
            .collect(),
        Some(_) => {
            return Err(ApiError::bad(
                "stop",
                "stop must be a string or an array of at most 4 strings",
            ))
        }
    };
    let stream = flag(&b, "stream")?;
    let include_usage = match b.get("stream_options") {
        None | Some(Value::Null) => false,
        Some(Value::Object(o)) => flag(o, "include_usage")
            .map_err(|_| ApiError::bad("stream_options.include_usage", "must be a boolean"))?,
        Some(_) => return Err(ApiError::bad("stream_options", "must be an object")),
    };

    // Output format.
    let mut grammar = match b.get("response_format") {
        None | Some(Value::Null) => None,
        Some(rf) => match rf.get("type").and_then(Value::as_str) {
            Some("text") => None,
            Some("json_object") => Some(GrammarSpec::JsonObject),
            Some("json_schema") => {
                let s = rf
                    .get("json_schema")
                    .and_then(|j| j.get("schema"))
                    .filter(|s| s.is_object())
                    .ok_or_else(|| {
                        ApiError::bad(
                            "response_format.json_schema.schema",
                            "json_schema needs a schema object",
                        )
                    })?;
                Some(GrammarSpec::JsonSchema(s.clone()))
            }
            _ => {
                return Err(ApiError::bad(
                    "response_format.type",
                    "response_format.type must be 'text', 'json_object' or 'json_schema'",
                ))
            }
        },
    };

    // Tools.
    let tools = tools_of(&b)?;
    let choice = b.get("tool_choice").filter(|v| !v.is_null());
    let (mode, offered): (ToolMode, Vec<&Tool>) = match choice {
        _ if tools.is_empty() => {
            if choice.is_some_and(|c| c.as_str() != Some("none")) {
                return Err(ApiError::bad("tool_choice", "tool_choice needs tools"));
            }
            (ToolMode::None, Vec::new())
        }
        None => (ToolMode::Auto, tools.iter().collect()),
        Some(Value::String(s)) => match s.as_str() {
            "none" => (ToolMode::None, Vec::new()),
            "auto" => (ToolMode::Auto, tools.iter().collect()),
            "required" => (ToolMode::Forced, tools.iter().collect()),
            _ => {
                return Err(ApiError::bad(
                    "tool_choice",
                    "tool_choice must be 'none', 'auto', 'required' or {type: 'function', function: {name}}",
                ))
            }
        },
        Some(c) => {
            let name = c
                .get("function")
                .and_then(|f| f.get("name"))
                .and_then(Value::as_str)
                .ok_or_else(|| ApiError::bad("tool_choice", "tool_choice.function.name is missing"))?;
            let t = tools.iter().find(|t| t.name == name).ok_or_else(|| {
                ApiError::bad("tool_choice", format!("no tool is named {name:?}"))
            })?;
            (ToolMode::Forced, vec![t])
        }
    };
    if mode == ToolMode::Forced {
        if grammar.is_some() {
            return Err(ApiError::bad(
                "response_format",
                "a forced tool call and a JSON response_format cannot be combined",
            ));
        }
        grammar = Some(GrammarSpec::JsonSchema(call_schema(&offered)));
    }

    let messages = messages_of(&b)?;
    let prompt = render(template, messages, &offered, mode != ToolMode::None)?;
    Ok(Prepared {
        prompt,
        max_tokens,
        params,
        extras: Extras {
            bias,
            frequency,
            presence,
            logprobs: logprobs.then_some(top_logprobs.unwrap_or(0) as usize),
            ..Extras::default()
        },
        stop,
        grammar,
        stream,
        include_usage,
        logprobs,
        tools: mode,
        model,
        seeded: seed.is_some(),
    })
}

/// The messages as the template sees them: roles checked, content as text,
/// an assistant's tool calls with their arguments as objects (templates
/// print them with `tojson`).
fn messages_of(b: &Map<String, Value>) -> Res<Vec<Value>> {
    let arr = b
        .get("messages")
        .and_then(Value::as_array)
        .filter(|a| !a.is_empty())
        .ok_or_else(|| ApiError::bad("messages", "messages must be a non-empty array"))?;
    arr.iter()
        .enumerate()
        .map(|(i, m)| {
            let p = format!("messages[{i}]");
            let role = m
                .get("role")
                .and_then(Value::as_str)
                .ok_or_else(|| ApiError::bad(&format!("{p}.role"), "role must be a string"))?;
            let role = match role {
                "developer" => "system",
                r @ ("system" | "user" | "assistant" | "tool") => r,
                other => {
                    return Err(ApiError::bad(
                        &format!("{p}.role"),
                        format!("unknown role {other:?}"),
                    ))
                }
            };
            let content = content_text(m.get("content"), &format!("{p}.content"))?;
            let mut out = json!({"role": role, "content": content});
            if let Some(calls) = m.get("tool_calls").and_then(Value::as_array) {
                let calls: Vec<Value> = calls
                    .iter()
                    .map(|c| {
                        let f = c.get("function").cloned().unwrap_or(Value::Null);
                        let args = match f.get("arguments") {
                            Some(Value::String(s)) => {
                                serde_json::from_str(s).unwrap_or(Value::String(s.clone()))
                            }
                            Some(v) => v.clone(),
                            None => json!({}),
                        };
                        json!({"id": c.get("id"), "type": "function",
                               "function": {"name": f.get("name"), "arguments": args}})
                    })
                    .collect();
                out["tool_calls"] = Value::Array(calls);
            }
            for k in ["tool_call_id", "name"] {
                if let Some(v) = m.get(k).filter(|v| v.is_string()) {
                    out[k] = v.clone();
                }
            }
            Ok(out)
        })
        .collect()
}

/// The prompt: the template's own tool support when it has it; otherwise
/// the tools described in a system message and earlier calls and results
/// written as text (the generic handling llama.cpp also uses).
fn render(
    template: &ChatTemplate,
    mut msgs: Vec<Value>,
    tools: &[&Tool],
    with_tools: bool,
) -> Res<String> {
    let native = with_tools && template.supports_tools();
    if with_tools && !native {
        let list: Vec<Value> = tools.iter().map(|t| t.raw["function"].clone()).collect();
        let text = format!(
            "You can call these tools:\n{}\nTo call one, reply with only a JSON object {{\"name\": <tool name>, \"arguments\": <its arguments>}}.",
            serde_json::to_string(&list).unwrap_or_default()
        );
        match msgs.first_mut() {
            Some(m) if m["role"] == "system" => {
                let c = m["content"].as_str().unwrap_or("").to_string();
                m["content"] = Value::String(format!("{c}\n\n{text}"));
            }
            _ => msgs.insert(0, json!({"role": "system", "content": text})),
        }
    }
    if !native {
        for m in &mut msgs {
            if let Some(calls) = m.get("tool_calls").and_then(Value::as_array).cloned() {
                let text: Vec<String> = calls
                    .iter()
                    .map(|c| {
                        json!({"name": c["function"]["name"], "arguments": c["function"]["arguments"]})
                            .to_string()
                    })
                    .collect();
                let c = m["content"].as_str().unwrap_or("").to_string();
                m["content"] = Value::String(format!("{c}{}", text.join("\n")));
            }
        }
    }
    let tools_json: Option<Vec<Value>> =
        native.then(|| tools.iter().map(|t| t.raw.clone()).collect());
    template
        .apply_json(&msgs, tools_json.as_deref(), true)
        .map_err(|e| ApiError::from(&e))
}

/// One parsed tool call.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolCall {
    pub name: String,
    /// The arguments as a JSON string, as OpenAI sends them.
    pub arguments: String,
}

fn call_from(v: &Value) -> Option<ToolCall> {
    let name = v.get("name")?.as_str()?.to_string();
    let args = v
        .get("arguments")
        .or_else(|| v.get("parameters"))
        .cloned()
        .unwrap_or_else(|| json!({}));
    let arguments = match args {
        Value::String(s) => s,
        other => other.to_string(),
    };
    Some(ToolCall { name, arguments })
}

/// Tool calls in a reply: Hermes/Qwen `<tool_call>{…}</tool_call>` blocks,
/// else the whole reply as a `{"name", "arguments"}` object (or an array of
/// them, or inside a ``` fence). Returns the text before the first call and
/// the calls; `None` when there are none.
pub fn parse_tool_calls(text: &str) -> Option<(String, Vec<ToolCall>)> {
    const OPEN: &str = "<tool_call>";
    const CLOSE: &str = "</tool_call>";
    if let Some(first) = text.find(OPEN) {
        let mut calls = Vec::new();
        let mut rest = &text[first..];
        while let Some(at) = rest.find(OPEN) {
            let body = &rest[at + OPEN.len()..];
            let (inner, next) = match body.find(CLOSE) {
                Some(end) => (&body[..end], &body[end + CLOSE.len()..]),
                None => (body, ""),
            };
            if let Some(c) = serde_json::from_str::<Value>(inner.trim())
                .ok()
                .as_ref()
                .and_then(call_from)
            {
                calls.push(c);
            }
            rest = next;
        }
        if !calls.is_empty() {
            return Some((text[..first].trim().to_string(), calls));
        }
    }
    let mut t = text.trim();
    if let Some(inner) = t.strip_prefix("```") {
        let inner = inner.strip_prefix("json").unwrap_or(inner);
        t = inner.strip_suffix("```").unwrap_or(inner).trim();
    }
    match serde_json::from_str::<Value>(t).ok()? {
        Value::Array(a) => {
            let calls: Option<Vec<ToolCall>> = a.iter().map(call_from).collect();
            calls.filter(|c| !c.is_empty()).map(|c| (String::new(), c))
        }
        v => call_from(&v).map(|c| (String::new(), vec![c])),
    }
}

/// OpenAI's finish reason for how a run ended.
pub fn finish_reason(stop: StopReason) -> &'static str {
    match stop {
        StopReason::Length | StopReason::Context => "length",
        _ => "stop",
    }
}

/// Timing and cache figures under `usage.webgguf` (an extension field).
pub fn usage(g: &Generation, grammar_ms: f64) -> Value {
    let completion = g.generated_ids.len();
    json!({
        "prompt_tokens": g.prompt_ids.len(),
        "completion_tokens": completion,
        "total_tokens": g.prompt_ids.len() + completion,
        "prompt_tokens_details": {"cached_tokens": g.prompt_ids.len() - g.prefilled},
        "webgguf": {
            "prefill_tok_s": g.prefill_tok_s(),
            "decode_tok_s": g.decode_tok_s(),
            "prefill_ms": g.prefill_ms,
            "decode_ms": g.decode_ms,
            "grammar_ms": grammar_ms,
            "stop_reason": g.stop.as_str(),
            "generated_ids": g.generated_ids,
        },
    })
}

/// OpenAI's logprobs entry for one token.
pub fn logprob_entry(tok: &Tokenizer, lp: &TokenLogprobs) -> Value {
    let one = |id: u32, logprob: f32| {
        let bytes = tok.token_bytes(id);
        json!({
            "token": String::from_utf8_lossy(&bytes),
            "logprob": logprob,
            "bytes": bytes,
        })
    };
    let mut e = one(lp.id, lp.logprob);
    e["top_logprobs"] = Value::Array(lp.top.iter().map(|&(i, l)| one(i, l)).collect());
    e
}

fn tool_calls_json(calls: &[ToolCall], ids: &mut dyn FnMut() -> String, streaming: bool) -> Value {
    Value::Array(
        calls
            .iter()
            .enumerate()
            .map(|(i, c)| {
                let mut v = json!({
                    "id": ids(),
                    "type": "function",
                    "function": {"name": c.name, "arguments": c.arguments},
                });
                if streaming {
                    v["index"] = json!(i);
                }
                v
            })
            .collect(),
    )
}

/// What a finished run answers: its text or tool calls, and the finish reason.
pub struct Answer {
    pub content: Option<String>,
    pub tool_calls: Vec<ToolCall>,
    pub finish: &'static str,
}

pub fn answer(p: &Prepared, text: &str, stop: StopReason) -> Answer {
    if p.tools != ToolMode::None {
        if let Some((before, calls)) = parse_tool_calls(text) {
            return Answer {
                content: (!before.is_empty()).then_some(before),
                tool_calls: calls,
                finish: "tool_calls",
            };
        }
    }
    Answer {
        content: Some(text.to_string()),
        tool_calls: Vec::new(),
        finish: finish_reason(stop),
    }
}

/// A `chat.completion` object.
#[allow(clippy::too_many_arguments)]
pub fn completion(
    id: &str,
    created: u64,
    p: &Prepared,
    a: &Answer,
    logprobs: Option<Vec<Value>>,
    usage: Value,
    ids: &mut dyn FnMut() -> String,
) -> Value {
    let mut message = json!({"role": "assistant", "content": a.content, "refusal": null});
    if !a.tool_calls.is_empty() {
        message["tool_calls"] = tool_calls_json(&a.tool_calls, ids, false);
    }
    json!({
        "id": id,
        "object": "chat.completion",
        "created": created,
        "model": p.model,
        "system_fingerprint": "webgguf",
        "choices": [{
            "index": 0,
            "message": message,
            "logprobs": logprobs.map(|c| json!({"content": c, "refusal": null})),
            "finish_reason": a.finish,
        }],
        "usage": usage,
    })
}

/// One `chat.completion.chunk` as a server-sent event.
pub fn chunk(
    id: &str,
    created: u64,
    model: &str,
    delta: Value,
    finish: Option<&str>,
    logprobs: Option<Vec<Value>>,
) -> String {
    let v = json!({
        "id": id,
        "object": "chat.completion.chunk",
        "created": created,
        "model": model,
        "system_fingerprint": "webgguf",
        "choices": [{
            "index": 0,
            "delta": delta,
            "logprobs": logprobs.map(|c| json!({"content": c, "refusal": null})),
            "finish_reason": finish,
        }],
    });
    format!("data: {v}\n\n")
}

/// The last chunk of a stream that asked for usage: no choices.
pub fn usage_chunk(id: &str, created: u64, model: &str, usage: Value) -> String {
    let v = json!({
        "id": id, "object": "chat.completion.chunk", "created": created, "model": model,
        "system_fingerprint": "webgguf", "choices": [], "usage": usage,
    });
    format!("data: {v}\n\n")
}

/// The delta that carries a streamed answer's tool calls.
pub fn tool_calls_delta(calls: &[ToolCall], ids: &mut dyn FnMut() -> String) -> Value {
    json!({"tool_calls": tool_calls_json(calls, ids, true)})
}

/// `GET /v1/models`: the one loaded model.
pub fn models(name: &str, created: u64) -> String {
    json!({"object": "list", "data": [{"id": name, "object": "model", "created": created, "owned_by": "webgguf"}]})
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn template() -> ChatTemplate {
        ChatTemplate::new(crate::chat::CHATML_TEMPLATE, "<s>", "</s>").unwrap()
    }

    fn prep(body: Value) -> Res<Prepared> {
        prepare(&body.to_string(), &template(), 2048, 1000)
    }

    #[test]
    fn bad_requests_name_the_param() {
        let base = json!({"model": "m", "messages": [{"role": "user", "content": "hi"}]});
        let with = |k: &str, v: Value| {
            let mut b = base.clone();
            b[k] = v;
            prep(b).unwrap_err()
        };
        assert_eq!(with("n", json!(2)).param.as_deref(), Some("n"));
        assert_eq!(
            with("temperature", json!(3)).param.as_deref(),
            Some("temperature")
        );
        assert_eq!(
            with("messages", json!([])).param.as_deref(),
            Some("messages")
        );
        assert_eq!(
            with("logit_bias", json!({"5000": 1})).param.as_deref(),
            Some("logit_bias")
        );
        assert_eq!(
            with("response_format", json!({"type": "xml"}))
                .param
                .as_deref(),
            Some("response_format.type")
        );
        assert_eq!(
            with("tool_choice", json!("required")).param.as_deref(),
            Some("tool_choice")
        );
        let e = prepare("{", &template(), 2048, 1000).unwrap_err();
        assert_eq!((e.status, e.param.as_deref()), (400, Some("body")));
        let ok = prep(base).unwrap();
        assert_eq!(ok.max_tokens, 2048);
        assert!(ok.grammar.is_none());
    }

    #[test]
    fn forced_tool_makes_a_schema_and_generic_prompt() {
        let b = json!({"model": "m", "messages": [{"role": "user", "content": "weather?"}],
            "tools": [{"type": "function", "function": {"name": "get_weather",
                "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}],
            "tool_choice": {"type": "function", "function": {"name": "get_weather"}}});
        let p = prep(b).unwrap();
        assert_eq!(p.tools, ToolMode::Forced);
        assert!(p.prompt.contains("get_weather") && p.prompt.starts_with("<|im_start|>system\n"));
        let Some(GrammarSpec::JsonSchema(s)) = &p.grammar else {
            panic!("no schema")
        };
        assert_eq!(s["properties"]["name"]["const"], "get_weather");
    }

    #[test]
    fn tool_calls_parse_from_hermes_and_json() {
        let (before, calls) = parse_tool_calls(
            "ok <tool_call>\n{\"name\": \"f\", \"arguments\": {\"a\": 1}}\n</tool_call>",
        )
        .unwrap();
        assert_eq!(before, "ok");
        assert_eq!(
            calls,
            vec![ToolCall {
                name: "f".into(),
                arguments: "{\"a\":1}".into()
            }]
        );
        let (_, calls) =
            parse_tool_calls("```json\n{\"name\": \"g\", \"parameters\": {}}\n```").unwrap();
        assert_eq!(calls[0].name, "g");
        assert!(parse_tool_calls("just text").is_none());
        assert!(parse_tool_calls("{\"a\": 1}").is_none());
    }
}
