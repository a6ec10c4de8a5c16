//! `conveyor-consumer <group>`: a consumer process for one queue group against RabbitMQ,
//! for deployments that ship one binary per role. Same as `conveyor consume <group>`.

use std::process::ExitCode;

#[tokio::main]
async fn main() -> ExitCode {
    let _ = rustls::crypto::aws_lc_rs::default_provider().install_default();
    let Some(group) = std::env::args().nth(1) else {
        eprintln!(
            "usage: conveyor-consumer <group>   (groups: {})",
            conveyor::app::groups(conveyor::domains::ALL).join(", ")
        );
        return ExitCode::from(2);
    };
    let sections = conveyor::app::sections(conveyor::domains::ALL);
    let settings = match conveyor::settings::Settings::load(None, &sections) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    };
    let process = format!("consume {group}");
    conveyor::telemetry::init(
        &settings.log,
        conveyor::telemetry::LogTo::Stdout,
        Some((&settings.telemetry, &process)),
    );
    let args = conveyor::cli::ConsumeArgs {
        group: Some(group),
        queues: Vec::new(),
    };
    let ran = conveyor::cli::consume(settings, &args, conveyor::shutdown::on_signal()).await;
    conveyor::traces::flush().await;
    match ran {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}
