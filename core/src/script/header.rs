//! A script's header: the `KEYS[i]` and `ARGV[i]` lines every script opens with, parsed into
//! [`Header`] (names, the roles each key takes, repeating groups), and the count rule a call is
//! checked against.

use crate::error::Result;

/// A script's declared interface, read from its header.
///
/// A `KEYS` line is `-- KEYS[i] name[=roles]  description`. The name is what the script reads the
/// key by (`K.name`, see [`assemble`]); the roles are the [`Key::role`]s a caller may bind there:
/// the name itself by default, alternatives with `|` (`finished=completed|failed`), and for a
/// repeating group a sequence with `+` that repeats (`job=record+logs`: a record, then its logs,
/// per job).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Header {
    /// Names of `KEYS[1..]`.
    pub keys: Vec<String>,
    /// Per `KEYS` line, the roles it takes: alternatives for a fixed key, the repeating sequence
    /// for a trailing `KEYS[n..]` group.
    pub key_roles: Vec<Vec<String>>,
    /// True when the last key line is a repeating `KEYS[n..]` group.
    pub keys_repeat: bool,
    /// Names of `ARGV[1..]`.
    pub argv: Vec<String>,
    /// True when the last ARGV line is a repeating `ARGV[n..]` group.
    pub argv_repeat: bool,
}

pub(super) fn parse_header(body: &str) -> Result<Header, String> {
    let mut h = Header {
        keys: Vec::new(),
        key_roles: Vec::new(),
        keys_repeat: false,
        argv: Vec::new(),
        argv_repeat: false,
    };
    for line in body.lines() {
        let Some(rest) = line.strip_prefix("--") else {
            break; // the header is the leading comment block
        };
        let rest = rest.trim_start();
        for (prefix, list, repeat) in [
            ("KEYS[", &mut h.keys, &mut h.keys_repeat),
            ("ARGV[", &mut h.argv, &mut h.argv_repeat),
        ] {
            let Some(after) = rest.strip_prefix(prefix) else {
                continue;
            };
            let close = after.find(']').ok_or("unclosed `[` in header")?;
            let (index, rep) = match after[..close].strip_suffix("..") {
                Some(i) => (i, true),
                None => (&after[..close], false),
            };
            let index: usize = index
                .parse()
                .map_err(|_| format!("bad index in {line:?}"))?;
            if *repeat {
                return Err(format!("{line:?} follows a repeating group"));
            }
            if index != list.len() + 1 {
                return Err(format!("{line:?}: expected index {}", list.len() + 1));
            }
            let word = after[close + 1..]
                .split_whitespace()
                .next()
                .ok_or_else(|| format!("{line:?} has no name"))?;
            let (name, roles) = word.split_once('=').unwrap_or((word, word));
            if prefix == "KEYS[" {
                let sep = if rep { '+' } else { '|' };
                let roles: Vec<String> = roles.split(sep).map(String::from).collect();
                if roles
                    .iter()
                    .any(|r| r.is_empty() || r.contains(['|', '+', '=']))
                {
                    return Err(format!("{line:?}: bad roles {word:?}"));
                }
                h.key_roles.push(roles);
            }
            list.push(name.to_string());
            *repeat = rep;
        }
    }
    Ok(h)
}

pub(super) fn count_ok(declared: usize, repeat: bool, given: usize) -> bool {
    if !repeat {
        return given == declared;
    }
    let fixed = declared - 1;
    given >= fixed
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_parses() {
        let h = parse_header(
            "-- x: does a thing\n-- KEYS[1] wait  the list\n-- KEYS[2..] job  per job\n-- ARGV[1] ttl_ms\nlocal x = 1\n-- KEYS[9] not header",
        )
        .unwrap();
        assert_eq!(h.keys, vec!["wait", "job"]);
        assert!(h.keys_repeat);
        assert_eq!(h.argv, vec!["ttl_ms"]);
        assert!(!h.argv_repeat);
        assert!(parse_header("-- KEYS[2] skipped\n").is_err());
        let h = parse_header(
            "-- KEYS[1] finished=completed|failed the set\n-- KEYS[2..] job=record+logs\n",
        )
        .unwrap();
        assert_eq!(h.keys, vec!["finished", "job"]);
        assert_eq!(
            h.key_roles,
            vec![vec!["completed", "failed"], vec!["record", "logs"]]
        );
        assert!(parse_header("-- KEYS[1] x=a||b\n").is_err());
    }
}
