//! Keyspace properties over arbitrary names, cross-checked against a real cluster's CLUSTER KEYSLOT,
//! and the wire-version check of `{emq}:version`.

mod common;

use emq::keyspace::{CoreKey, Family, JobPart, QueueName};
use emq::{hash_tag, key_slot};
use emq::{ConnectOptions, ErrorCode, JobId, Store};
use proptest::prelude::*;

fn every_key(q: &QueueName, id: JobId) -> Vec<emq::Key> {
    let mut keys: Vec<_> = Family::ALL.iter().map(|f| q.key(*f)).collect();
    keys.extend(JobPart::ALL.iter().map(|p| q.job_key(id, *p)));
    keys
}

/// An id the gate accepts, near `raw`: the only way in is the text form, so try check digits.
fn a_job_id(raw: u64) -> JobId {
    const A: &[u8] = b"0123456789abcdefghjkmnpqrstvwxyz";
    let v = raw >> 1;
    let mut body = String::from("j");
    for i in (0..13).rev() {
        body.push(A[((v >> (i * 5)) & 31) as usize] as char);
    }
    for c0 in A {
        for c1 in A {
            let t = format!("{body}{}{}", *c0 as char, *c1 as char);
            if let Ok(id) = JobId::parse(&t) {
                return id;
            }
        }
    }
    unreachable!("some check digits match")
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn any_name_is_wrapped_once_or_refused(name in any::<String>(), raw in any::<u64>()) {
        match QueueName::new(&name) {
            Ok(q) => {
                prop_assert_eq!(QueueName::new(&q.braced()).unwrap(), q.clone());
                prop_assert!(!q.as_str().eq_ignore_ascii_case("emq"));
                let id = a_job_id(raw);
                for k in every_key(&q, id) {
                    let text = k.as_str();
                    prop_assert_eq!(text.matches('{').count(), 1, "{}", text);
                    prop_assert_eq!(text.matches('}').count(), 1, "{}", text);
                    prop_assert_eq!(hash_tag(text), Some(q.as_str()));
                    prop_assert_eq!(k.slot(), q.slot());
                    prop_assert!(text.starts_with("emq:{"), "{}", text);
                    for core in CoreKey::ALL {
                        prop_assert!(!text.starts_with("{emq}"), "{}", text);
                        let ck = core.key();
                        prop_assert_ne!(text, ck.as_str());
                    }
                }
            }
            Err(e) => prop_assert_eq!(e.code(), ErrorCode::InvalidQueueName),
        }
    }

    #[test]
    fn plausible_names_are_accepted(name in "[a-zA-Z0-9._\\-äöü支払]{1,64}") {
        prop_assume!(!name.eq_ignore_ascii_case("emq"));
        let q = QueueName::new(&name).unwrap();
        prop_assert_eq!(q.as_str(), name.as_str());
        let wait = q.key(Family::Wait);
        prop_assert_eq!(wait.as_str(), format!("emq:{{{name}}}:wait"));
    }
}

#[tokio::test]
async fn slots_match_cluster_keyslot() {
    let store = common::cluster().await;
    let mut conn = store.conn();
    let id = a_job_id(0x1234_5678_9abc_def0);
    for i in 0..60 {
        let q = QueueName::new(&format!("orders-{i}-ü")).unwrap();
        for k in every_key(&q, id)
            .into_iter()
            .chain(CoreKey::ALL.iter().map(|c| c.key()))
        {
            let server: u16 = redis::cmd("CLUSTER")
                .arg("KEYSLOT")
                .arg(k.as_str())
                .query_async(&mut conn)
                .await
                .unwrap();
            assert_eq!(server, k.slot(), "{k}");
            assert_eq!(server, key_slot(k.as_str()));
        }
    }
}

#[tokio::test]
async fn an_incompatible_version_is_refused() {
    let server = emq_harness::RedisServer::start().unwrap();
    let store = Store::connect(ConnectOptions::new(server.url()).guarded(true))
        .await
        .unwrap();
    let mut conn = store.conn();
    let v: String = redis::cmd("GET")
        .arg(CoreKey::Version.key())
        .query_async(&mut conn)
        .await
        .unwrap();
    assert_eq!(v, emq::WIRE_VERSION.to_string());
    let _: () = redis::cmd("SET")
        .arg(CoreKey::Version.key())
        .arg("1")
        .query_async(&mut conn)
        .await
        .unwrap();
    let e = Store::connect(ConnectOptions::new(server.url()))
        .await
        .err()
        .expect("refused");
    assert_eq!(e.code(), ErrorCode::IncompatibleVersion);
    assert!(e.message().contains("{emq}:version"), "{e}");
}
