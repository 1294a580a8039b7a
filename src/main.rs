fn main() -> std::process::ExitCode {
    abide::app::main()
}
