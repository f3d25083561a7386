//! The skiff binary: flags → config → manager → exit code.
#![forbid(unsafe_code)]

fn main() {
    eprintln!("skiff: not wired yet");
    std::process::exit(2);
}
