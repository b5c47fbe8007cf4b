//! How an `emq::Error` ends the program: `error[<code>]: <message>` on stderr, and an exit code.
//!
//! Exit codes: 0 success; 2 invalid input (the caller should change the command line: a bad queue
//! name, job id, option or payload; clap's usage errors exit 2 as well); 1 anything else (the
//! datastore, a script, a state of the queue).

use emq::ErrorCode;
use std::process::ExitCode;

/// Exit code for input the caller must fix.
pub const INVALID_INPUT: u8 = 2;

/// Exit code for every other failure.
pub const FAILURE: u8 = 1;

/// The exit code of an error code.
pub fn code_for(code: ErrorCode) -> u8 {
    match code {
        ErrorCode::InvalidQueueName
        | ErrorCode::InvalidJobId
        | ErrorCode::InvalidOption
        | ErrorCode::InvalidPayload => INVALID_INPUT,
        _ => FAILURE,
    }
}

/// Prints `error[<code>]: <message>` to stderr and gives the exit code to return from `main`.
pub fn report(err: &emq::Error) -> ExitCode {
    eprintln!("error[{}]: {}", err.code(), err.message());
    ExitCode::from(code_for(err.code()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn invalid_input_exits_2_everything_else_1() {
        for code in ErrorCode::ALL {
            let want = if code.as_str().starts_with("invalid_") && code != ErrorCode::InvalidState {
                INVALID_INPUT
            } else {
                FAILURE
            };
            assert_eq!(code_for(code), want, "{code}");
        }
        assert_eq!(code_for(ErrorCode::InvalidQueueName), 2);
        assert_eq!(code_for(ErrorCode::ServerUnavailable), 1);
    }
}
