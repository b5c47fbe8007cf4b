//! The keyspace's unit tests: the name rules, the keys' texts and slots, the family table.

use super::*;
use crate::error::ErrorCode;

#[test]
fn wraps_idempotently() {
    let a = QueueName::new("orders").unwrap();
    let b = QueueName::new("{orders}").unwrap();
    assert_eq!(a, b);
    assert_eq!(a.key(Family::Wait).as_str(), "emq:{orders}:wait");
    assert_eq!(QueueName::new(&a.braced()).unwrap(), a);
}

#[test]
fn rejects_each_rule_with_its_message() {
    for (name, needle) in [
        ("", "empty"),
        ("{}", "empty"),
        ("a:b", "`:`"),
        ("a{b", "`{`"),
        ("a}b", "`}`"),
        ("{a", "unbalanced"),
        ("{{a}}", "`{`"),
        ("emq", "reserved"),
        ("EMQ", "reserved"),
        ("{emq}", "reserved"),
        ("a b", "whitespace"),
        ("a\u{7}b", "control"),
    ] {
        let err = QueueName::new(name).unwrap_err();
        assert_eq!(err.code(), ErrorCode::InvalidQueueName, "{name:?}");
        assert!(
            err.message().contains(needle),
            "{name:?}: {}",
            err.message()
        );
    }
    let long = "x".repeat(MAX_QUEUE_NAME_BYTES + 1);
    assert!(QueueName::new(&long)
        .unwrap_err()
        .message()
        .contains("longer"));
    assert!(QueueName::new(&"x".repeat(MAX_QUEUE_NAME_BYTES)).is_ok());
    assert!(QueueName::new("zahlungen-ü-支払い").is_ok());
}

#[test]
fn roles_are_the_suffixes_in_header_spelling() {
    let q = QueueName::new("orders").unwrap();
    for f in Family::ALL {
        assert_eq!(f.role(), f.suffix().replace('-', "_"), "{f:?}");
        assert_eq!(q.key(f).role(), f.role());
    }
    let id = crate::JobId::from_parts(1, 1, 1);
    assert_eq!(q.job_key(id, JobPart::Record).role(), "record");
    assert_eq!(q.job_key(id, JobPart::Logs).role(), "logs");
    assert_eq!(CoreKey::Nodes.key().role(), "nodes");
}

#[test]
fn core_keys_share_the_emq_tag() {
    for k in CoreKey::ALL {
        assert_eq!(crate::hash_slot::hash_tag(k.key().as_str()), Some("emq"));
    }
}
