#[derive(clap::Args, Debug)]
pub struct LabArgs {}
pub fn run(_: &LabArgs) -> anyhow::Result<std::process::ExitCode> {
    anyhow::bail!("lab is not built yet")
}
