//! The spec conversions' checks: every bound, option string and shape, and the messages that name
//! them.

use super::*;
use crate::worker::WorkerOptions;

fn code<T: std::fmt::Debug>(r: Result<T>) -> (ErrorCode, String) {
    let e = r.unwrap_err();
    (e.code(), e.message().to_string())
}

#[test]
fn a_worker_count_is_refused_naming_its_own_bounds_and_the_value_given() {
    // NaN saturated to u64::MAX and a negative was checked against 0..=u64::MAX: the message
    // named neither the real bound nor the value the caller gave.
    let worker = |spec: WorkerSpec| code(WorkerOptions::try_from(spec));
    for (n, shown) in [
        (f64::NAN, "NaN"),
        (-1.0, "-1"),
        (0.0, "0"),
        (2.5, "2.5"),
        (20_000.0, "20000"),
    ] {
        let (c, m) = worker(WorkerSpec {
            concurrency: Some(n),
            ..WorkerSpec::default()
        });
        assert_eq!(c, ErrorCode::InvalidOption);
        assert_eq!(
            m,
            format!("concurrency must be a whole number between 1 and 10000, got {shown}")
        );
    }
    let (_, m) = worker(WorkerSpec {
        max_stalls: Some(-1.0),
        ..WorkerSpec::default()
    });
    assert_eq!(
        m,
        "max_stalls must be a whole number between 0 and 1000, got -1"
    );
    let (_, m) = worker(WorkerSpec {
        prefetch: Some(f64::NAN),
        ..WorkerSpec::default()
    });
    assert_eq!(
        m,
        "prefetch must be a whole number between 0 and 10000, got NaN"
    );
    let ok = WorkerOptions::try_from(WorkerSpec {
        concurrency: Some(10_000.0),
        max_stalls: Some(0.0),
        prefetch: Some(0.0),
        ..WorkerSpec::default()
    })
    .unwrap();
    assert_eq!(
        (ok.concurrency, ok.max_stalls, ok.prefetch),
        (10_000, 0, Some(0))
    );
}

#[test]
fn a_job_spec_converts_and_names_its_bounds() {
    let o = JobOptions::try_from(JobSpec {
        delay: Some(Millis(1.6)),
        priority: Some(3.0),
        attempts: Some(2.0),
        backoff: Some(BackoffSpec {
            kind: "exponential".into(),
            delay: Some(Millis(10.0)),
            max: Some(Millis(80.0)),
        }),
        parent_policy: Some("ignore".into()),
        remove_on_complete: Some(RemovalSpec::Count(100.0)),
        remove_on_fail: Some(RemovalSpec::Flag(true)),
        ..Default::default()
    })
    .unwrap();
    assert_eq!(o.delay_ms, 2);
    assert_eq!(o.priority, 3);
    assert_eq!(o.attempts, 2);
    assert_eq!(
        o.backoff,
        Backoff::Exponential {
            delay_ms: 10,
            max_ms: 80
        }
    );
    assert_eq!(o.parent_policy, ParentPolicy::Ignore);
    assert_eq!(
        o.remove_on_complete,
        Removal::Within(Retention {
            count: Some(100),
            age_ms: None
        })
    );
    assert_eq!(o.remove_on_fail, Removal::Now);
    assert_eq!(
        JobOptions::try_from(JobSpec::default()).unwrap(),
        JobOptions::default()
    );

    let bad = |s: JobSpec, name: &str| {
        let (c, m) = code(JobOptions::try_from(s));
        assert_eq!(c, ErrorCode::InvalidOption, "{name}: {m}");
        assert!(m.contains(name), "{name}: {m}");
    };
    bad(
        JobSpec {
            priority: Some(1.5),
            ..Default::default()
        },
        "priority",
    );
    bad(
        JobSpec {
            priority: Some(1e12),
            ..Default::default()
        },
        "2097151",
    );
    bad(
        JobSpec {
            attempts: Some(-1.0),
            ..Default::default()
        },
        "attempts",
    );
    bad(
        JobSpec {
            attempts: Some(0.0),
            ..Default::default()
        },
        "attempts",
    );
    bad(
        JobSpec {
            delay: Some(Millis(f64::NAN)),
            ..Default::default()
        },
        "delay",
    );
    bad(
        JobSpec {
            backoff: Some(BackoffSpec {
                kind: "linear".into(),
                ..Default::default()
            }),
            ..Default::default()
        },
        "backoff.type",
    );
    bad(
        JobSpec {
            parent_policy: Some("drop".into()),
            ..Default::default()
        },
        "parent_policy",
    );
    bad(
        JobSpec {
            remove_on_complete: Some(RemovalSpec::Limits(RetentionSpec::default())),
            ..Default::default()
        },
        "remove_on_complete",
    );
    bad(
        JobSpec {
            remove_on_fail: Some(RemovalSpec::Count(-1.0)),
            ..Default::default()
        },
        "remove_on_fail",
    );
    let (c, _) = code(JobOptions::try_from(JobSpec {
        id: Some("nope".into()),
        ..Default::default()
    }));
    assert_eq!(c, ErrorCode::InvalidJobId);
}

#[test]
fn specs_read_from_json_with_camel_case_aliases() {
    let s: JobSpec = serde_json::from_str(
        r#"{"delay": 5, "dedupTtl": 100, "dedup": "k", "parentPolicy": "remove",
            "removeOnComplete": {"count": 10, "age": 1000}, "remove_on_fail": 3,
            "backoff": {"type": "fixed", "delay": 20}}"#,
    )
    .unwrap();
    let o = JobOptions::try_from(s).unwrap();
    assert_eq!(o.dedup_ttl_ms, 100);
    assert_eq!(o.parent_policy, ParentPolicy::Remove);
    assert_eq!(
        o.remove_on_complete,
        Removal::Within(Retention {
            count: Some(10),
            age_ms: Some(1000)
        })
    );
    assert_eq!(o.backoff, Backoff::Fixed { delay_ms: 20 });
    let e = serde_json::from_str::<JobSpec>(r#"{"delya": 5}"#).unwrap_err();
    assert!(e.to_string().contains("delya"), "{e}");

    let f: FlowSpec = serde_json::from_str(
        r#"{"name": "p", "data": 1, "children": [{"name": "c", "queue": "other", "opts": {"attempts": 2}}]}"#,
    )
    .unwrap();
    let (c, _) = code(f.clone().into_flow("q"));
    assert_eq!(c, ErrorCode::InvalidPayload, "a child without data");
    let mut f = f;
    f.children[0].data = Some(Value::Null);
    let flow = f.into_flow("q").unwrap();
    assert_eq!(flow.queue, "q");
    assert_eq!(flow.children[0].queue, "other");
    assert_eq!(flow.children[0].options.attempts, 2);
}

#[test]
fn flows_schedules_limits_and_workers_hold_their_rules() {
    let mut deep = FlowSpec {
        name: "leaf".into(),
        data: Some(Value::Null),
        ..Default::default()
    };
    for _ in 0..=MAX_FLOW_DEPTH {
        deep = FlowSpec {
            name: "n".into(),
            data: Some(Value::Null),
            children: vec![deep],
            ..Default::default()
        };
    }
    assert!(code(deep.into_flow("q")).1.contains("levels"));

    let both = ScheduleSpec {
        name: "t".into(),
        data: Some(Value::Null),
        every: Some(Millis(10.0)),
        cron: Some("* * * * *".into()),
        ..Default::default()
    };
    assert!(code(Schedule::try_from(both)).1.contains("exactly one"));
    let cron = Schedule::try_from(ScheduleSpec {
        name: "t".into(),
        data: Some(Value::Null),
        cron: Some("* * * * *".into()),
        ..Default::default()
    })
    .unwrap();
    assert!(matches!(cron.repeat, Repeat::Cron { ref tz, .. } if tz == "UTC"));

    let half = RateLimitSpec {
        max: Some(5.0),
        window: None,
    };
    assert!(code(Option::<RateLimit>::try_from(half)).1.contains("both"));
    assert_eq!(
        Option::<RateLimit>::try_from(RateLimitSpec::default()).unwrap(),
        None
    );
    assert!(global_concurrency(Some(0.5)).is_err());

    let w = WorkerOptions::try_from(WorkerSpec {
        concurrency: Some(4.0),
        remove_on_complete: Some(RemovalSpec::Flag(true)),
        remove_on_fail: Some(RemovalSpec::Flag(false)),
        ..Default::default()
    })
    .unwrap();
    assert_eq!(w.concurrency, 4);
    assert_eq!(w.completed.count, Some(0));
    assert_eq!(w.failed, Retention::KEEP_ALL);
    for (name, s) in [
        (
            "concurrency",
            WorkerSpec {
                concurrency: Some(1e30),
                ..Default::default()
            },
        ),
        (
            "concurrency",
            WorkerSpec {
                concurrency: Some(0.0),
                ..Default::default()
            },
        ),
        (
            "lease",
            WorkerSpec {
                lease: Some(Millis(-1.0)),
                ..Default::default()
            },
        ),
        (
            "max_stalls",
            WorkerSpec {
                max_stalls: Some(2.5),
                ..Default::default()
            },
        ),
    ] {
        let (c, m) = code(WorkerOptions::try_from(s));
        assert_eq!(c, ErrorCode::InvalidOption);
        assert!(m.starts_with(name), "{name}: {m}");
    }
}

#[test]
fn a_spec_read_from_json_names_the_field_at_fault_and_takes_its_code_from_the_error_kind() {
    let job = |v: Value| code(from_json_value::<JobSpec>("add", v));
    let (c, m) = job(serde_json::json!({"delay": "soon"}));
    assert_eq!(c, ErrorCode::InvalidOption);
    assert!(
        m.starts_with("add: delay: invalid type: string \"soon\", expected a duration"),
        "{m}"
    );
    let (c, m) = job(serde_json::json!({"backoff": {"type": "fixed", "delai": 1}}));
    assert_eq!(c, ErrorCode::InvalidOption);
    assert!(
        m.starts_with("add: backoff.delai: unknown field `delai`"),
        "{m}"
    );
    // An `id` where no id is taken is an unknown option, not a bad id.
    let (c, m) = code(from_json_text::<FlowSpec>(
        "addFlow",
        r#"{"name":"p","id":"x"}"#,
    ));
    assert_eq!(c, ErrorCode::InvalidOption, "{m}");
    // A job id of the wrong type is a bad id, wherever the job sits.
    let (c, m) = job(serde_json::json!({"id": 5}));
    assert_eq!(c, ErrorCode::InvalidJobId, "{m}");
    let (c, m) = code(from_json_text::<FlowSpec>(
        "addFlow",
        r#"{"name":"p","children":[{"name":"c","opts":{"id":[1]}}]}"#,
    ));
    assert_eq!(c, ErrorCode::InvalidJobId);
    assert!(m.starts_with("addFlow: children[0].opts.id: "), "{m}");
    // Words of a payload fault in a field's name do not make it one.
    let (c, _) = code(from_json_text::<JobSpec>(
        "add",
        r#"{"recursion limit surrogate":1}"#,
    ));
    assert_eq!(c, ErrorCode::InvalidOption);
    // Text that does not read back (nested too deep, a lone surrogate, trailing text).
    let deep = format!(
        r#"{{"name":"a","data":{}{}}}"#,
        "[".repeat(200),
        "]".repeat(200)
    );
    assert_eq!(
        code(from_json_text::<FlowSpec>("f", &deep)).0,
        ErrorCode::InvalidPayload
    );
    let lone = r#"{"name":"a","data":"\ud800"}"#;
    assert_eq!(
        code(from_json_text::<FlowSpec>("f", lone)).0,
        ErrorCode::InvalidPayload
    );
    assert_eq!(
        code(from_json_text::<JobSpec>("f", "{} {}")).0,
        ErrorCode::InvalidPayload
    );
}

#[test]
fn a_removal_count_from_json_is_an_integer() {
    let removal =
        |v: Value| from_json_value::<JobSpec>("", serde_json::json!({"remove_on_fail": v}));
    assert_eq!(
        removal(serde_json::json!(3)).unwrap().remove_on_fail,
        Some(RemovalSpec::Count(3.0))
    );
    for bad in [
        serde_json::json!(0.0),
        serde_json::json!(2.5),
        serde_json::json!("3"),
    ] {
        assert_eq!(code(removal(bad)).0, ErrorCode::InvalidOption);
    }
    assert_eq!(
        removal(serde_json::json!(true)).unwrap().remove_on_fail,
        Some(RemovalSpec::Flag(true))
    );
}

#[test]
fn a_spec_in_seconds_reads_every_duration_as_seconds_and_nothing_else() {
    let s: JobSpec = from_json_value(
        "",
        serde_json::json!({
            "delay": 1.5, "lease": 2, "timeout": 3, "dedup_ttl": 4, "priority": 5, "attempts": 6,
            "backoff": {"type": "exponential", "delay": 0.25, "max": 7},
            "remove_on_complete": {"count": 8, "age": 9}, "remove_on_fail": 10,
        }),
    )
    .unwrap();
    let s = s.from_seconds();
    assert_eq!(s.delay, Some(Millis(1500.0)));
    assert_eq!(
        (s.lease, s.timeout, s.dedup_ttl),
        (
            Some(Millis(2000.0)),
            Some(Millis(3000.0)),
            Some(Millis(4000.0))
        )
    );
    assert_eq!((s.priority, s.attempts), (Some(5.0), Some(6.0)));
    let b = s.backoff.unwrap();
    assert_eq!(
        (b.delay, b.max),
        (Some(Millis(250.0)), Some(Millis(7000.0)))
    );
    assert_eq!(
        s.remove_on_complete,
        Some(RemovalSpec::Limits(RetentionSpec {
            count: Some(8.0),
            age: Some(Millis(9000.0))
        }))
    );
    assert_eq!(s.remove_on_fail, Some(RemovalSpec::Count(10.0)));
}
