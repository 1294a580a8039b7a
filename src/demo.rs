//! `abide demo`: placeholder until the lab lands.
pub fn run() -> anyhow::Result<std::process::ExitCode> {
    anyhow::bail!("demo is not built yet")
}
