//! Fetches a URL and prints the status, the headers, each chunk's size as it
//! arrives, and the body's outcome.
//!
//! `cargo run -p smith-net --example fetch -- https://example.com/`
//!
//! Proxy variables (`HTTPS_PROXY`, `NO_PROXY`, ...) are honoured.

use smith_net::{BodyEvent, CancelToken, Client, Request};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let Some(url) = std::env::args().nth(1) else {
        eprintln!("usage: fetch URL");
        std::process::exit(2);
    };
    let client = Client::new()?;
    let mut response = client.send(Request::get(&url)?, CancelToken::new())?;
    println!("status {} {}", response.status(), response.reason());
    for (name, value) in response.headers().iter() {
        println!("{name}: {value}");
    }
    loop {
        match response.body().next_event() {
            BodyEvent::Data(bytes) => println!("chunk of {} bytes", bytes.len()),
            BodyEvent::End(outcome) => {
                println!("outcome: {outcome:?}");
                break;
            }
        }
    }
    Ok(())
}
