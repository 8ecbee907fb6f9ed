//! The `webgguf` command line: the native shell around the engine, used to
//! test the kernels against llama.cpp's references and to benchmark them.
//! It is native-only; the browser's shell is the library's `web` module.
//! (Cargo also builds binaries for wasm32 test runs, hence the empty twin.)

#[cfg(not(target_arch = "wasm32"))]
mod cli;

#[cfg(not(target_arch = "wasm32"))]
fn main() -> std::process::ExitCode {
    cli::main()
}

#[cfg(target_arch = "wasm32")]
fn main() {}
