//! Chat prompts: the GGUF's own Jinja template (`tokenizer.chat_template`)
//! rendered with minijinja, the way Hugging Face's `apply_chat_template`
//! renders it. A file without one gets a known template chosen from its
//! architecture and vocabulary, as llama.cpp does ([`TemplateOrigin`]).
//!
//! Templates come from untrusted files, so rendering runs on a fuel budget
//! (a template that loops forever becomes an error, not a hung tab) and every
//! failure is an `Error::ChatTemplate` naming the cause.

use minijinja::{context, Environment, ErrorKind, Value};
use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::gguf::Gguf;

/// One turn of a conversation, as the templates expect it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Message {
    pub role: String,
    pub content: String,
}

impl Message {
    pub fn new(role: &str, content: &str) -> Message {
        Message {
            role: role.to_string(),
            content: content.to_string(),
        }
    }
}

/// Gemma's turn format, for Gemma files that carry no template of their own
/// (Gemma 3 270M's GGUF has none). Written here from the format's definition:
/// every turn is `<start_of_turn>ROLE\n` + text + `<end_of_turn>\n`, the
/// assistant's role is called `model`, and there is no system role, so a
/// system message becomes the opening paragraph of the first turn after it
/// (a turn of its own when nothing follows). Texts are trimmed, as Gemma's
/// official template does. BOS is not written: the tokenizer adds it by the
/// model's rule when the prompt is tokenized.
pub const GEMMA_TEMPLATE: &str = r#"{#- Gemma turns; see chat.rs -#}
{%- if messages and messages[0].role == 'system' -%}
  {%- set preamble = (messages[0].content | trim) ~ '\n\n' -%}
  {%- set turns = messages[1:] -%}
{%- else -%}
  {%- set preamble = '' -%}
  {%- set turns = messages -%}
{%- endif -%}
{%- if preamble and not turns -%}
{{ '<start_of_turn>user\n' ~ (preamble | trim) ~ '<end_of_turn>\n' }}
{%- endif -%}
{%- for m in turns -%}
  {%- if m.role == 'assistant' -%}{%- set role = 'model' -%}{%- else -%}{%- set role = m.role -%}{%- endif -%}
{{ '<start_of_turn>' ~ role ~ '\n' ~ (preamble if loop.first else '') ~ (m.content | trim) ~ '<end_of_turn>\n' }}
{%- endfor -%}
{%- if add_generation_prompt -%}
{{ '<start_of_turn>model\n' }}
{%- endif -%}"#;

/// ChatML, for every other file without a template: each turn is
/// `<|im_start|>ROLE\n` + text + `<|im_end|>\n`, roles as given, and the
/// reply opens with `<|im_start|>assistant\n`. It is the right format where
/// the vocabulary has `<|im_start|>`, and the usual default otherwise
/// (llama.cpp's server makes the same choice).
pub const CHATML_TEMPLATE: &str = r#"{#- ChatML turns; see chat.rs -#}
{%- for m in messages -%}
{{ '<|im_start|>' ~ m.role ~ '\n' ~ m.content ~ '<|im_end|>\n' }}
{%- endfor -%}
{%- if add_generation_prompt -%}
{{ '<|im_start|>assistant\n' }}
{%- endif -%}"#;

/// Where the chat template a model uses comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TemplateOrigin {
    /// The file's own `tokenizer.chat_template`.
    File,
    /// No template in the file; a Gemma architecture or a vocabulary with
    /// `<start_of_turn>`: [`GEMMA_TEMPLATE`].
    Gemma,
    /// No template in the file, anything else: [`CHATML_TEMPLATE`].
    ChatMl,
}

impl TemplateOrigin {
    /// Choose from what a file declares: its own template if it has one;
    /// otherwise Gemma's when `architecture` starts with `gemma` or the
    /// vocabulary has `<start_of_turn>`; otherwise ChatML (whether or not the
    /// vocabulary has `<|im_start|>`).
    pub fn choose(
        has_own: bool,
        architecture: Option<&str>,
        has_token: impl Fn(&str) -> bool,
    ) -> TemplateOrigin {
        if has_own {
            TemplateOrigin::File
        } else if architecture.is_some_and(|a| a.starts_with("gemma"))
            || has_token("<start_of_turn>")
        {
            TemplateOrigin::Gemma
        } else {
            TemplateOrigin::ChatMl
        }
    }

    /// [`Self::choose`] on a GGUF's metadata (`tokenizer.chat_template`,
    /// `general.architecture`, `tokenizer.ggml.tokens`).
    pub fn from_gguf(g: &Gguf) -> TemplateOrigin {
        let tokens = g.get_array("tokenizer.ggml.tokens").unwrap_or(&[]);
        TemplateOrigin::choose(
            g.get_str("tokenizer.chat_template").is_some(),
            g.get_str("general.architecture"),
            |t| tokens.iter().any(|v| v.as_str() == Some(t)),
        )
    }

    /// How `info` names it: `file`, `fallback: gemma` or `fallback: chatml`.
    pub fn label(self) -> &'static str {
        match self {
            TemplateOrigin::File => "file",
            TemplateOrigin::Gemma => "fallback: gemma",
            TemplateOrigin::ChatMl => "fallback: chatml",
        }
    }

    /// The fallback's source; `None` for [`TemplateOrigin::File`].
    pub fn fallback_source(self) -> Option<&'static str> {
        match self {
            TemplateOrigin::File => None,
            TemplateOrigin::Gemma => Some(GEMMA_TEMPLATE),
            TemplateOrigin::ChatMl => Some(CHATML_TEMPLATE),
        }
    }
}

/// Instructions a template may execute before it is stopped. Real templates
/// use a few thousand; this leaves room for long conversations.
const FUEL: u64 = 50_000_000;

/// A compiled chat template with the special-token strings it may use.
pub struct ChatTemplate {
    env: Environment<'static>,
    bos: String,
    eos: String,
}

impl ChatTemplate {
    /// Compile `source`; `bos`/`eos` are the texts of the model's special
    /// tokens (templates write `{{ bos_token }}` themselves).
    pub fn new(source: &str, bos: &str, eos: &str) -> Result<ChatTemplate> {
        let mut env = Environment::new();
        // Hugging Face renders with trim_blocks and lstrip_blocks on.
        env.set_trim_blocks(true);
        env.set_lstrip_blocks(true);
        env.set_fuel(Some(FUEL));
        env.set_unknown_method_callback(minijinja_contrib::pycompat::unknown_method_callback);
        env.add_function("raise_exception", raise_exception);
        // Llama 3.x templates print today's date; a fixed one keeps prompts
        // (and so KV-cache reuse and tests) reproducible.
        env.add_function("strftime_now", |_fmt: String| "01 Jan 2025".to_string());
        env.add_template_owned("chat", source.to_string())
            .map_err(|e| Error::ChatTemplate(describe(&e)))?;
        Ok(ChatTemplate {
            env,
            bos: bos.to_string(),
            eos: eos.to_string(),
        })
    }

    /// The prompt for `messages`; with `add_generation_prompt` it ends where
    /// the assistant's reply begins.
    pub fn apply(&self, messages: &[Message], add_generation_prompt: bool) -> Result<String> {
        if let Some(m) = messages.iter().find(|m| m.role.is_empty()) {
            return Err(Error::InvalidArgument(format!(
                "a chat message has an empty role (content {:?})",
                m.content.chars().take(40).collect::<String>()
            )));
        }
        let t = self
            .env
            .get_template("chat")
            .map_err(|e| Error::ChatTemplate(describe(&e)))?;
        t.render(context! {
            messages => Value::from_serialize(messages),
            add_generation_prompt => add_generation_prompt,
            bos_token => self.bos.as_str(),
            eos_token => self.eos.as_str(),
        })
        .map_err(|e| Error::ChatTemplate(describe(&e)))
    }
}

impl ChatTemplate {
    /// Whether the template reads a `tools` variable (Qwen-style templates
    /// render tool definitions and calls themselves).
    pub fn supports_tools(&self) -> bool {
        self.env
            .get_template("chat")
            .is_ok_and(|t| t.undeclared_variables(false).contains("tools"))
    }

    /// [`Self::apply`] over messages as JSON objects (OpenAI's, with
    /// `tool_calls`, `tool_call_id`, `name`), with `tools` passed to the
    /// template when given.
    pub fn apply_json(
        &self,
        messages: &[serde_json::Value],
        tools: Option<&[serde_json::Value]>,
        add_generation_prompt: bool,
    ) -> Result<String> {
        let t = self
            .env
            .get_template("chat")
            .map_err(|e| Error::ChatTemplate(describe(&e)))?;
        t.render(context! {
            messages => Value::from_serialize(messages),
            tools => tools.map(Value::from_serialize),
            add_generation_prompt => add_generation_prompt,
            bos_token => self.bos.as_str(),
            eos_token => self.eos.as_str(),
        })
        .map_err(|e| Error::ChatTemplate(describe(&e)))
    }
}

fn raise_exception(msg: String) -> std::result::Result<Value, minijinja::Error> {
    Err(minijinja::Error::new(
        ErrorKind::InvalidOperation,
        format!("the template raised: {msg}"),
    ))
}

fn describe(e: &minijinja::Error) -> String {
    let mut s = match e.kind() {
        ErrorKind::OutOfFuel => "the template ran too long (stopped after its step budget)".into(),
        _ => e.to_string(),
    };
    let mut src = std::error::Error::source(e);
    while let Some(inner) = src {
        s.push_str(&format!(": {inner}"));
        src = inner.source();
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    // SmolLM2-135M-Instruct's template, as its GGUF carries it.
    const SMOL: &str = "{% for message in messages %}{% if loop.first and messages[0]['role'] != 'system' %}{{ '<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n' }}{% endif %}{{'<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}";

    #[test]
    fn smollm2_template_adds_default_system_and_generation_prompt() {
        let t = ChatTemplate::new(SMOL, "<|im_start|>", "<|im_end|>").unwrap();
        let p = t.apply(&[Message::new("user", "Hi")], true).unwrap();
        assert_eq!(
            p,
            "<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n"
        );
        let p = t
            .apply(
                &[Message::new("system", "S"), Message::new("user", "U")],
                false,
            )
            .unwrap();
        assert_eq!(
            p,
            "<|im_start|>system\nS<|im_end|>\n<|im_start|>user\nU<|im_end|>\n"
        );
    }

    fn conversation() -> Vec<Message> {
        vec![
            Message::new("system", "You are terse."),
            Message::new("user", "Hi"),
            Message::new("assistant", "Hello!"),
            Message::new("user", "2+2?"),
        ]
    }

    #[test]
    fn gemma_fallback_renders_gemma_turns() {
        let t = ChatTemplate::new(GEMMA_TEMPLATE, "<bos>", "<eos>").unwrap();
        // The system text opens the first user turn; the assistant is "model".
        assert_eq!(
            t.apply(&conversation(), true).unwrap(),
            "<start_of_turn>user\nYou are terse.\n\nHi<end_of_turn>\n\
             <start_of_turn>model\nHello!<end_of_turn>\n\
             <start_of_turn>user\n2+2?<end_of_turn>\n\
             <start_of_turn>model\n"
        );
        assert_eq!(
            t.apply(&conversation()[1..2], false).unwrap(),
            "<start_of_turn>user\nHi<end_of_turn>\n"
        );
        // Texts are trimmed; a lone system message still reaches the model.
        assert_eq!(
            t.apply(&[Message::new("user", " \n Hi there \n")], true)
                .unwrap(),
            "<start_of_turn>user\nHi there<end_of_turn>\n<start_of_turn>model\n"
        );
        assert_eq!(
            t.apply(&[Message::new("system", "Be kind.")], true)
                .unwrap(),
            "<start_of_turn>user\nBe kind.<end_of_turn>\n<start_of_turn>model\n"
        );
        assert_eq!(t.apply(&[], true).unwrap(), "<start_of_turn>model\n");
    }

    #[test]
    fn chatml_fallback_renders_chatml_turns() {
        let t = ChatTemplate::new(CHATML_TEMPLATE, "<s>", "</s>").unwrap();
        assert_eq!(
            t.apply(&conversation(), true).unwrap(),
            "<|im_start|>system\nYou are terse.<|im_end|>\n\
             <|im_start|>user\nHi<|im_end|>\n\
             <|im_start|>assistant\nHello!<|im_end|>\n\
             <|im_start|>user\n2+2?<|im_end|>\n\
             <|im_start|>assistant\n"
        );
        assert_eq!(
            t.apply(&[Message::new("user", " x ")], false).unwrap(),
            "<|im_start|>user\n x <|im_end|>\n"
        );
    }

    #[test]
    fn template_choice_prefers_the_file_then_gemma_then_chatml() {
        use TemplateOrigin::*;
        let none = |_: &str| false;
        let vocab = |tok: &'static str| move |t: &str| t == tok;
        // A file's own template always wins, Gemma or not.
        assert_eq!(TemplateOrigin::choose(true, Some("gemma3"), none), File);
        assert_eq!(
            TemplateOrigin::choose(true, Some("llama"), vocab("<start_of_turn>")),
            File
        );
        // Gemma by architecture name or by its turn token.
        assert_eq!(TemplateOrigin::choose(false, Some("gemma3"), none), Gemma);
        assert_eq!(TemplateOrigin::choose(false, Some("gemma"), none), Gemma);
        assert_eq!(
            TemplateOrigin::choose(false, Some("llama"), vocab("<start_of_turn>")),
            Gemma
        );
        // ChatML with or without <|im_start|> in the vocabulary.
        assert_eq!(
            TemplateOrigin::choose(false, Some("llama"), vocab("<|im_start|>")),
            ChatMl
        );
        assert_eq!(TemplateOrigin::choose(false, Some("qwen2"), none), ChatMl);
        assert_eq!(TemplateOrigin::choose(false, None, none), ChatMl);
        assert_eq!(File.fallback_source(), None);
        assert_eq!(Gemma.fallback_source(), Some(GEMMA_TEMPLATE));
        assert_eq!(ChatMl.label(), "fallback: chatml");
    }

    #[test]
    fn python_methods_bos_and_raise() {
        let src = "{{ bos_token }}{% for m in messages %}{% if m.role == 'bad' %}{{ raise_exception('no bad roles') }}{% endif %}[{{ m.content.strip() | upper }}]{% endfor %}";
        let t = ChatTemplate::new(src, "<s>", "</s>").unwrap();
        assert_eq!(
            t.apply(&[Message::new("user", "  hi ")], false).unwrap(),
            "<s>[HI]"
        );
        let e = t.apply(&[Message::new("bad", "x")], false).unwrap_err();
        assert!(e.to_string().contains("no bad roles"), "{e}");
    }

    #[test]
    fn hostile_templates_are_errors() {
        let e = ChatTemplate::new("{% for x in %}", "", "").err().unwrap();
        assert!(matches!(e, Error::ChatTemplate(_)), "{e}");
        let t = ChatTemplate::new(
            "{% for a in range(100000) %}{% for b in range(100000) %}{% endfor %}{% endfor %}",
            "",
            "",
        )
        .unwrap();
        let e = t.apply(&[], false).unwrap_err();
        assert!(e.to_string().contains("too long"), "{e}");
        let e = ChatTemplate::new("x", "", "")
            .unwrap()
            .apply(&[Message::new("", "x")], true)
            .unwrap_err();
        assert!(e.to_string().contains("empty role"), "{e}");
    }
}
