//! What keeps the dashboard safe: URL redaction and secret scrubbing, the token check, the
//! loopback `Host` check, and the action guard (custom header + same origin + read-only).

use axum::http::{HeaderMap, StatusCode};

/// The datastore's secrets (passwords in its URLs) and its URL as shown.
#[derive(Clone, Debug)]
pub struct Secrets {
    passwords: Vec<String>,
    shown: String,
}

/// `scheme://user:***@host:port/db`: the URL without its password. (Only the part after the last
/// `@` of the authority is kept as is.)
pub fn redact_url(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_string();
    };
    match rest.rsplit_once('@') {
        Some((userinfo, host)) => {
            let user = match userinfo.split_once(':') {
                Some((user, _)) => format!("{user}:***"),
                None => "***".to_string(),
            };
            format!("{scheme}://{user}@{host}")
        }
        None => url.to_string(),
    }
}

/// The password of a URL (or its bare userinfo), if it has one.
fn password_of(url: &str) -> Option<String> {
    let rest = url.split_once("://")?.1;
    let userinfo = rest.rsplit_once('@')?.0;
    let pw = userinfo.split_once(':').map(|(_, p)| p).unwrap_or(userinfo);
    (!pw.is_empty()).then(|| pw.to_string())
}

impl Secrets {
    /// From the URLs the connection uses.
    pub fn from_urls(urls: &[String]) -> Secrets {
        let mut passwords: Vec<String> = urls.iter().filter_map(|u| password_of(u)).collect();
        // Percent-decoded forms too, as a client library may print them decoded.
        let decoded: Vec<String> = passwords.iter().map(|p| percent_decode(p)).collect();
        passwords.extend(decoded);
        passwords.sort_by_key(|p| std::cmp::Reverse(p.len()));
        passwords.dedup();
        Secrets {
            passwords,
            shown: urls
                .iter()
                .map(|u| redact_url(u))
                .collect::<Vec<_>>()
                .join(", "),
        }
    }

    /// The datastore as shown on the page and in logs.
    pub fn shown_url(&self) -> &str {
        &self.shown
    }

    /// `text` with every secret replaced by `***`.
    pub fn scrub(&self, text: &str) -> String {
        let mut out = text.to_string();
        for p in &self.passwords {
            out = out.replace(p.as_str(), "***");
        }
        out
    }

    /// The error with its message scrubbed.
    pub fn scrub_error(&self, e: emq::Error) -> emq::Error {
        emq::Error::new(e.code(), self.scrub(e.message()))
    }
}

fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' && i + 2 < bytes.len() {
            if let Ok(b) = u8::from_str_radix(&s[i + 1..i + 3], 16) {
                out.push(b);
                i += 3;
                continue;
            }
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Compares in time independent of where the texts differ.
pub fn same_secret(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if a.len() != b.len() {
        return false;
    }
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// The cookie that carries the token after `/login`.
pub const COOKIE: &str = "emq_ui_token";

/// The token a request carries (bearer header or cookie).
pub fn request_token(headers: &HeaderMap) -> Option<String> {
    if let Some(v) = headers
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
    {
        return Some(v.trim().to_string());
    }
    headers
        .get_all("cookie")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|c| c.trim().split_once('='))
        .find(|(k, _)| *k == COOKIE)
        .map(|(_, v)| v.to_string())
}

/// True when the `Host` header names a loopback host (so a DNS-rebound name cannot reach a
/// tokenless dashboard).
pub fn loopback_host(headers: &HeaderMap) -> bool {
    let Some(host) = headers.get("host").and_then(|v| v.to_str().ok()) else {
        return false;
    };
    let name = if let Some(rest) = host.strip_prefix('[') {
        rest.split(']').next().unwrap_or("")
    } else {
        host.rsplit_once(':').map(|(h, _)| h).unwrap_or(host)
    };
    matches!(name, "127.0.0.1" | "localhost" | "::1") || name.starts_with("127.")
}

/// Why an action is refused, if it is: the custom header, the origin, read-only.
pub fn action_refusal(
    headers: &HeaderMap,
    read_only: bool,
) -> Option<(StatusCode, &'static str, String)> {
    if headers.get("x-emq-ui").and_then(|v| v.to_str().ok()) != Some("1") {
        return Some((
            StatusCode::FORBIDDEN,
            "csrf",
            "an action needs the header X-EMQ-UI: 1 (sent by the dashboard's own page)".into(),
        ));
    }
    if let (Some(origin), Some(host)) = (
        headers.get("origin").and_then(|v| v.to_str().ok()),
        headers.get("host").and_then(|v| v.to_str().ok()),
    ) {
        let same = origin
            .split_once("://")
            .map(|(_, o)| o == host)
            .unwrap_or(false);
        if !same {
            return Some((
                StatusCode::FORBIDDEN,
                "csrf",
                format!("an action from another origin ({origin}) is refused"),
            ));
        }
    }
    if read_only {
        return Some((
            StatusCode::FORBIDDEN,
            "read_only",
            "this dashboard is read-only (emq ui --read-only): actions are refused".into(),
        ));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_lose_their_password_and_messages_their_secrets() {
        assert_eq!(
            redact_url("redis://app:hunter2@db:6379/0"),
            "redis://app:***@db:6379/0"
        );
        assert_eq!(redact_url("rediss://:p%40ss@db:1"), "rediss://:***@db:1");
        assert_eq!(
            redact_url("redis://127.0.0.1:6379"),
            "redis://127.0.0.1:6379"
        );
        let s = Secrets::from_urls(&["redis://app:p%40ss@db:1".into()]);
        assert_eq!(s.shown_url(), "redis://app:***@db:1");
        assert_eq!(
            s.scrub("auth p@ss failed for p%40ss"),
            "auth *** failed for ***"
        );
    }

    #[test]
    fn tokens_compare_whole() {
        assert!(same_secret("abcdefgh", "abcdefgh"));
        assert!(!same_secret("abcdefgh", "abcdefgX"));
        assert!(!same_secret("abcdefgh", "abcdefg"));
    }

    #[test]
    fn actions_need_the_header_the_origin_and_write_access() {
        let mut h = HeaderMap::new();
        h.insert("host", "127.0.0.1:7777".parse().unwrap());
        assert_eq!(action_refusal(&h, false).unwrap().1, "csrf");
        h.insert("x-emq-ui", "1".parse().unwrap());
        assert!(action_refusal(&h, false).is_none());
        assert_eq!(action_refusal(&h, true).unwrap().1, "read_only");
        h.insert("origin", "http://evil.example".parse().unwrap());
        assert_eq!(action_refusal(&h, false).unwrap().1, "csrf");
        h.insert("origin", "http://127.0.0.1:7777".parse().unwrap());
        assert!(action_refusal(&h, false).is_none());
    }

    #[test]
    fn only_loopback_hosts_pass_without_a_token() {
        let host = |v: &str| {
            let mut h = HeaderMap::new();
            h.insert("host", v.parse().unwrap());
            loopback_host(&h)
        };
        assert!(host("127.0.0.1:7777"));
        assert!(host("localhost:7777"));
        assert!(host("[::1]:7777"));
        assert!(!host("rebind.example:7777"));
        assert!(!loopback_host(&HeaderMap::new()));
    }
}
