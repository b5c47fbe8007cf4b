//! One module per subcommand. Each has its clap `Args` (if it takes any) and a `run`.

pub mod dev;
pub mod keyspace;
