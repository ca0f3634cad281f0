//! A mock OpenAI-compatible endpoint on 127.0.0.1 for trying `tierscope tiers generate` without a
//! model (the same server the tests use). Its tiers are cut from the text deterministically; they
//! are not a model's and measure nothing about one.
//!
//! ```text
//! cargo run --example mock_openai            # prints the URL, serves until killed
//! cargo run --example mock_openai -- --invent  # also invents a version in every compact tier
//! cargo run --example mock_openai -- --delay-ms 800  # every answer takes 0.8 s
//! tierscope tiers generate sample-traces/M1.json --endpoint <URL> --model mock-historian --out /tmp/t
//! ```

#[allow(dead_code)]
#[path = "../tests/it/historian_common/mock.rs"]
mod mock;

fn main() {
    let server = mock::MockServer::start();
    let args: Vec<String> = std::env::args().collect();
    if args.iter().any(|a| a == "--invent") {
        server.invent_a_version();
    }
    // `--delay-ms N`: every answer takes N ms, as a real model's would.
    if let Some(ms) = args
        .iter()
        .position(|a| a == "--delay-ms")
        .and_then(|i| args.get(i + 1))
        .and_then(|v| v.parse::<u64>().ok())
    {
        server.slow(std::time::Duration::from_millis(ms));
    }
    println!("{}", server.url());
    loop {
        std::thread::park();
    }
}
