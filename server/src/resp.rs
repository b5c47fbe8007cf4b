//! A tiny blocking RESP2 client over `std::net::TcpStream`, used for readiness
//! PINGs (here and in the test harness) and the harness's CLUSTER INFO /
//! CLUSTER SLOTS polls on plain-TCP loopback servers (TLS servers are probed
//! with `redis-cli --tls`).
//! It is deliberately minimal: one command per connection, bounded timeouts.

use std::io::{self, BufRead, BufReader, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpStream};
use std::time::Duration;

/// One RESP2 reply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Value {
    Simple(String),
    Error(String),
    Int(i64),
    Bulk(Option<Vec<u8>>),
    Array(Option<Vec<Value>>),
}

impl Value {
    /// The reply as text (simple or bulk string), if it is one.
    pub fn as_text(&self) -> Option<String> {
        match self {
            Value::Simple(s) => Some(s.clone()),
            Value::Bulk(Some(b)) => Some(String::from_utf8_lossy(b).into_owned()),
            _ => None,
        }
    }

    /// The reply as an integer (RESP integer, or a string holding one).
    pub fn as_int(&self) -> Option<i64> {
        match self {
            Value::Int(i) => Some(*i),
            other => other.as_text()?.trim().parse().ok(),
        }
    }

    pub fn as_array(&self) -> Option<&[Value]> {
        match self {
            Value::Array(Some(v)) => Some(v),
            _ => None,
        }
    }
}

const MAX_DEPTH: usize = 16;
const MAX_LEN: i64 = 64 * 1024 * 1024;

/// Sends one command to 127.0.0.1:`port` on a fresh connection and reads
/// one reply. Every step is bounded by `timeout`.
pub fn command(port: u16, args: &[&str], timeout: Duration) -> io::Result<Value> {
    let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
    let stream = TcpStream::connect_timeout(&addr, timeout)?;
    stream.set_read_timeout(Some(timeout))?;
    stream.set_write_timeout(Some(timeout))?;
    stream.set_nodelay(true)?;
    let mut w = &stream;
    w.write_all(&encode(args))?;
    w.flush()?;
    let mut r = BufReader::new(&stream);
    read_value(&mut r, 0)
}

/// Encodes a command as a RESP array of bulk strings.
pub fn encode(args: &[&str]) -> Vec<u8> {
    let mut out = format!("*{}\r\n", args.len()).into_bytes();
    for a in args {
        out.extend_from_slice(format!("${}\r\n", a.len()).as_bytes());
        out.extend_from_slice(a.as_bytes());
        out.extend_from_slice(b"\r\n");
    }
    out
}

fn bad(msg: impl Into<String>) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, msg.into())
}

fn read_line<R: BufRead>(r: &mut R) -> io::Result<String> {
    let mut line = Vec::new();
    r.read_until(b'\n', &mut line)?;
    if line.is_empty() {
        return Err(io::Error::new(
            io::ErrorKind::UnexpectedEof,
            "connection closed before a reply",
        ));
    }
    if !line.ends_with(b"\r\n") {
        return Err(bad("RESP line not terminated by CRLF"));
    }
    line.truncate(line.len() - 2);
    String::from_utf8(line).map_err(|_| bad("RESP line is not UTF-8"))
}

fn read_len(s: &str) -> io::Result<i64> {
    let n: i64 = s
        .parse()
        .map_err(|_| bad(format!("bad RESP length {s:?}")))?;
    if n > MAX_LEN {
        return Err(bad(format!("RESP length {n} too large")));
    }
    Ok(n)
}

/// Reads one RESP2 value.
pub fn read_value<R: BufRead>(r: &mut R, depth: usize) -> io::Result<Value> {
    if depth > MAX_DEPTH {
        return Err(bad("RESP nesting too deep"));
    }
    let line = read_line(r)?;
    let (kind, rest) = line.split_at(line.chars().next().map_or(0, char::len_utf8));
    match kind {
        "+" => Ok(Value::Simple(rest.to_string())),
        "-" => Ok(Value::Error(rest.to_string())),
        ":" => rest
            .parse()
            .map(Value::Int)
            .map_err(|_| bad(format!("bad RESP integer {rest:?}"))),
        "$" => {
            let n = read_len(rest)?;
            if n < 0 {
                return Ok(Value::Bulk(None));
            }
            let mut buf = vec![0u8; n as usize + 2];
            r.read_exact(&mut buf)?;
            if !buf.ends_with(b"\r\n") {
                return Err(bad("bulk string not terminated by CRLF"));
            }
            buf.truncate(n as usize);
            Ok(Value::Bulk(Some(buf)))
        }
        "*" => {
            let n = read_len(rest)?;
            if n < 0 {
                return Ok(Value::Array(None));
            }
            let mut items = Vec::with_capacity(n.min(1024) as usize);
            for _ in 0..n {
                items.push(read_value(r, depth + 1)?);
            }
            Ok(Value::Array(Some(items)))
        }
        _ => Err(bad(format!("unexpected RESP reply {line:?}"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_nested_replies() {
        let raw = b"*3\r\n+OK\r\n:42\r\n*2\r\n$3\r\nfoo\r\n$-1\r\n";
        let v = read_value(&mut &raw[..], 0).unwrap();
        assert_eq!(
            v,
            Value::Array(Some(vec![
                Value::Simple("OK".into()),
                Value::Int(42),
                Value::Array(Some(vec![
                    Value::Bulk(Some(b"foo".to_vec())),
                    Value::Bulk(None)
                ])),
            ]))
        );
    }

    #[test]
    fn encodes_commands() {
        assert_eq!(encode(&["PING"]), b"*1\r\n$4\r\nPING\r\n".to_vec());
    }

    #[test]
    fn rejects_garbage() {
        assert!(read_value(&mut &b"?x\r\n"[..], 0).is_err());
        assert!(read_value(&mut &b""[..], 0).is_err());
    }
}
