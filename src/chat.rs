//! Chat prompts: the GGUF's own Jinja template (`tokenizer.chat_template`)
//! rendered with minijinja, the way Hugging Face's `apply_chat_template`
//! renders it.
//!
//! Templates come from untrusted files, so rendering runs on a fuel budget
//! (a template that loops forever becomes an error, not a hung tab) and every
//! failure is an `Error::ChatTemplate` naming the cause.

use minijinja::{context, Environment, ErrorKind, Value};
use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

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
