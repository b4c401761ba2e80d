//! `rag-eval collect`: an OTLP/HTTP receiver writing the traces it receives to a file.

use anyhow::Result;
use camino::Utf8PathBuf;
use clap::Args;
use std::io::Write as _;
use std::net::SocketAddr;

#[derive(Args)]
pub(super) struct CollectArgs {
    /// The loopback address to listen on (port 0: any free port; the address is printed).
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:4318")]
    listen: SocketAddr,
    /// The file each received request is appended to, one line a request (created when
    /// missing).
    #[arg(long, value_name = "FILE")]
    out: Utf8PathBuf,
}

pub(super) fn run(a: CollectArgs) -> Result<()> {
    let out = a.out.clone();
    super::runtime()?.block_on(crate::traces::collect::collect(a.listen, &a.out, |addr| {
        // The first line tells a script (and a person) where to send: the endpoint to give
        // as OTEL_EXPORTER_OTLP_ENDPOINT.
        let mut stdout = std::io::stdout();
        let _ = writeln!(
            stdout,
            "listening on http://{addr} (POST /v1/traces, OTLP protobuf or JSON; appending to {out})"
        );
        let _ = stdout.flush();
    }))?;
    Ok(())
}
