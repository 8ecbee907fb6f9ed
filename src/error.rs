//! One error type for the whole engine. Every variant names the problem in
//! words a web developer can act on; across the wasm boundary it becomes a JS
//! `Error` carrying the `Display` text.

use std::fmt;

#[derive(Debug, Clone, PartialEq)]
pub enum Error {
    /// The file ends before a structure it promises.
    Truncated(String),
    /// The first four bytes are not `GGUF`.
    BadMagic([u8; 4]),
    /// A GGUF version this engine does not read.
    UnsupportedVersion(u32),
    /// The header, metadata or tensor table is malformed.
    Malformed(String),
    /// A tensor's bytes lie (partly) outside the file or are misaligned.
    TensorOutOfBounds(String),
    /// `general.architecture` names a model family we do not run.
    UnknownArchitecture(String),
    /// The model asks for a feature we do not implement (a rope scaling
    /// type, value heads of another size, ...): an error, never ignored.
    Unsupported(String),
    /// A tensor uses a block format we cannot compute with.
    UnsupportedTensorType { tensor: String, type_name: String },
    /// A tensor the architecture requires is absent.
    MissingTensor(String),
    /// A metadata key the architecture requires is absent or has the wrong type.
    MissingKey(String),
    /// Tensor shapes disagree with the config or with each other.
    ShapeMismatch(String),
    /// Tokenizer metadata is absent or inconsistent.
    Tokenizer(String),
    /// The prompt plus generated tokens exceed the context window.
    ContextOverflow { needed: usize, context: usize },
    /// A token id outside the vocabulary.
    BadToken { id: u32, vocab: usize },
    /// A caller-supplied option is out of range.
    InvalidArgument(String),
    /// GPU setup or execution failed.
    Gpu(String),
    /// The GPU device was lost (driver reset, tab backgrounded, destroy()).
    DeviceLost(String),
    /// The model needs more than the GPU's limits allow.
    DeviceLimit(String),
    /// The model's chat template is missing, invalid, or failed to render.
    ChatTemplate(String),
    /// The model is generating; one generation at a time.
    Busy,
    /// The caller aborted generation.
    Aborted,
    /// Host I/O failed: a file (CLI), a network read or a Blob (browser).
    Io(String),
    /// The file's SHA-256 is not the one the caller gave.
    Checksum(String),
    /// The files of a split model (llama.cpp's gguf-split,
    /// `NAME-00001-of-00003.gguf`...) do not fit together: one missing or
    /// extra, out of order, given alone, or disagreeing with each other.
    Split(String),
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Truncated(what) => write!(f, "truncated GGUF file: {what}"),
            Error::BadMagic(m) => write!(
                f,
                "not a GGUF file: wrong magic {:?} (expected \"GGUF\")",
                String::from_utf8_lossy(m)
            ),
            Error::UnsupportedVersion(v) => {
                write!(f, "unsupported GGUF version {v} (only version 3 is read)")
            }
            Error::Malformed(what) => write!(f, "malformed GGUF file: {what}"),
            Error::TensorOutOfBounds(what) => write!(f, "tensor data out of bounds: {what}"),
            Error::UnknownArchitecture(a) => {
                write!(
                    f,
                    "unknown architecture '{a}' (supported: {})",
                    crate::arch::SUPPORTED.join(", ")
                )
            }
            Error::Unsupported(what) => write!(f, "unsupported model feature: {what}"),
            Error::UnsupportedTensorType { tensor, type_name } => write!(
                f,
                "unsupported tensor type {type_name} for tensor '{tensor}'"
            ),
            Error::MissingTensor(name) => write!(f, "missing required tensor '{name}'"),
            Error::MissingKey(key) => write!(f, "missing or invalid metadata key '{key}'"),
            Error::ShapeMismatch(what) => write!(f, "shape mismatch: {what}"),
            Error::Tokenizer(what) => write!(f, "tokenizer error: {what}"),
            Error::ContextOverflow { needed, context } => write!(
                f,
                "context overflow: {needed} tokens needed but the context holds {context}"
            ),
            Error::BadToken { id, vocab } => {
                write!(f, "token id {id} is outside the vocabulary of {vocab}")
            }
            Error::InvalidArgument(what) => write!(f, "invalid argument: {what}"),
            Error::Gpu(what) => write!(f, "GPU error: {what}"),
            Error::DeviceLost(what) => write!(f, "GPU device lost: {what}"),
            Error::DeviceLimit(what) => write!(f, "model exceeds GPU limits: {what}"),
            Error::ChatTemplate(what) => write!(f, "chat template error: {what}"),
            Error::Busy => write!(
                f,
                "a generation is already running on this model; await it (or abort it) first"
            ),
            Error::Aborted => write!(f, "generation aborted"),
            Error::Io(what) => write!(f, "I/O error: {what}"),
            Error::Checksum(what) => write!(f, "checksum mismatch: {what}"),
            Error::Split(what) => write!(f, "split model: {what}"),
        }
    }
}

impl std::error::Error for Error {}

impl Error {
    /// A stable name for the kind of error, for programs that branch on it
    /// (the JS `Error`'s `code`; its `name` for the few that have a web
    /// convention, `AbortError` and `DeviceLostError`).
    pub fn code(&self) -> &'static str {
        match self {
            Error::Truncated(_) => "Truncated",
            Error::BadMagic(_) => "BadMagic",
            Error::UnsupportedVersion(_) => "UnsupportedVersion",
            Error::Malformed(_) => "Malformed",
            Error::TensorOutOfBounds(_) => "TensorOutOfBounds",
            Error::UnknownArchitecture(_) => "UnknownArchitecture",
            Error::Unsupported(_) => "Unsupported",
            Error::UnsupportedTensorType { .. } => "UnsupportedTensorType",
            Error::MissingTensor(_) => "MissingTensor",
            Error::MissingKey(_) => "MissingKey",
            Error::ShapeMismatch(_) => "ShapeMismatch",
            Error::Tokenizer(_) => "Tokenizer",
            Error::ContextOverflow { .. } => "ContextOverflow",
            Error::BadToken { .. } => "BadToken",
            Error::InvalidArgument(_) => "InvalidArgument",
            Error::Gpu(_) => "Gpu",
            Error::DeviceLost(_) => "DeviceLost",
            Error::DeviceLimit(_) => "DeviceLimit",
            Error::ChatTemplate(_) => "ChatTemplate",
            Error::Busy => "Busy",
            Error::Aborted => "Aborted",
            Error::Io(_) => "Io",
            Error::Checksum(_) => "ChecksumMismatch",
            Error::Split(_) => "Split",
        }
    }
}

pub type Result<T> = std::result::Result<T, Error>;
