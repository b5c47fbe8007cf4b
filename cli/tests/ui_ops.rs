//! `emq ui`'s operations over HTTP, no browser: a job's timeline and flow, cancel and change
//! priority, bulk actions, find by id / dedup key / name (a bounded scan), the schedulers, and a
//! queue's fair groups (listed sorted, paused, resumed, weighed, capped).

use emq::{ConnectOptions, FlowJob, JobOptions, JobPart, JobState, NewJob, Queue};
use serde_json::{json, Value};

mod ui_support;
use ui_support::Ui;

const ACTION: (&str, &str) = ("X-EMQ-UI", "1");

fn unique(prefix: &str) -> String {
    use std::sync::atomic::{AtomicU32, Ordering};
    static N: AtomicU32 = AtomicU32::new(0);
    format!(
        "{prefix}-{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    )
}

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

fn url() -> String {
    emq_harness::shared_standalone().url()
}

async fn queue(name: &str) -> Queue {
    Queue::connect(ConnectOptions::new(url()), name)
        .await
        .unwrap()
}

fn get(ui: &Ui, path: &str) -> Value {
    let r = ui.request("GET", path, &[], "");
    assert_eq!(r.status, 200, "{path}: {}", r.body);
    r.json()
}

fn post(ui: &Ui, path: &str, body: Value) -> (u16, Value) {
    let r = ui.request("POST", path, &[ACTION], &body.to_string());
    let status = r.status;
    (status, r.json())
}

fn ids_of(v: &Value) -> Vec<String> {
    v["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|j| j["id"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn a_job_page_has_its_timeline_at_server_times_and_its_flow_across_queues() {
    let (pq, cq) = (unique("ui-parent"), unique("ui-child"));
    let rt = rt();
    let (parent, child, before) = rt.block_on(async {
        let q = queue(&pq).await;
        let before = emq_cli_time(&q).await;
        let ids = q
            .add_flow(FlowJob {
                queue: pq.clone(),
                name: "assemble".into(),
                data: json!({}),
                options: JobOptions::default(),
                children: vec![FlowJob {
                    queue: cq.clone(),
                    name: "part".into(),
                    data: json!({"n": 1}),
                    options: JobOptions::default(),
                    children: vec![],
                }],
            })
            .await
            .unwrap();
        (ids.id, ids.children[0].id, before)
    });
    let ui = Ui::start(&[url()], &[], &[]);
    let p = get(&ui, &format!("/api/queues/{pq}/jobs/{parent}"));
    assert_eq!(p["job"]["state"], "waiting-children");
    let children = p["flow"]["children"].as_array().unwrap();
    assert_eq!(children.len(), 1, "{p}");
    assert_eq!(children[0]["queue"], cq.as_str());
    assert_eq!(children[0]["id"], child.to_string());
    assert_eq!(children[0]["status"], "pending");
    assert_eq!(children[0]["state"], "waiting");
    assert!(p["flow"]["parent"].is_null());

    let c = get(&ui, &format!("/api/queues/{cq}/jobs/{child}"));
    assert_eq!(c["flow"]["parent"]["queue"], pq.as_str());
    assert_eq!(c["flow"]["parent"]["id"], parent.to_string());
    assert_eq!(c["flow"]["parent"]["state"], "waiting-children");
    let events = c["timeline"]["events"].as_array().unwrap();
    assert_eq!(events.len(), 1, "{c}");
    assert_eq!(events[0]["kind"], "added");
    let at = events[0]["at_ms"].as_u64().unwrap();
    let now = c["now_ms"].as_u64().unwrap();
    assert!(before <= at && at <= now, "{before} <= {at} <= {now}");
    assert_eq!(c["timeline"]["whole_stream"], true);

    // Progress and a failure show up on the timeline in order, with their fields.
    rt.block_on(async {
        let q = queue(&cq).await;
        q.update_progress(child, &json!(50)).await.unwrap();
        let out = q.cancel(child, "not needed").await.unwrap();
        assert_eq!(out, emq::CancelOutcome::Cancelled);
    });
    let c = get(&ui, &format!("/api/queues/{cq}/jobs/{child}"));
    let kinds: Vec<&str> = c["timeline"]["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["kind"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["added", "progress", "failed"], "{c}");
    let failed = &c["timeline"]["events"][2];
    assert_eq!(failed["fields"]["code"], "cancelled", "{failed}");
    let at: Vec<u64> = c["timeline"]["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["at_ms"].as_u64().unwrap())
        .collect();
    assert!(at.windows(2).all(|w| w[0] <= w[1]), "{at:?}");
    rt.block_on(async {
        queue(&pq).await.obliterate(true).await.unwrap();
        queue(&cq).await.obliterate(true).await.unwrap();
    });
}

/// The server's clock, as the dashboard reads it.
async fn emq_cli_time(q: &Queue) -> u64 {
    let (s, us): (u64, u64) = redis::cmd("TIME")
        .query_async(&mut q.store().conn())
        .await
        .unwrap();
    s * 1000 + us / 1000
}

#[test]
fn cancel_and_change_priority_from_the_job_page() {
    let name = unique("ui-cancel");
    let rt = rt();
    let (a, b) = rt.block_on(async {
        let q = queue(&name).await;
        let a = q.add("a", json!({}), JobOptions::default()).await.unwrap();
        let b = q.add("b", json!({}), JobOptions::default()).await.unwrap();
        (a, b)
    });
    let ui = Ui::start(&[url()], &[], &[]);
    let base = format!("/api/queues/{name}/jobs");
    let (st, out) = post(&ui, &format!("{base}/{a}/priority"), json!({"priority": 5}));
    assert_eq!(st, 200, "{out}");
    let j = get(&ui, &format!("{base}/{a}"));
    assert_eq!(j["job"]["priority"], 5);
    assert_eq!(j["job"]["state"], "prioritized");
    let (st, out) = post(&ui, &format!("{base}/{a}/priority"), json!({}));
    assert_eq!((st, &out["error"]["code"]), (400, &json!("invalid_option")));
    let (st, out) = post(
        &ui,
        &format!("{base}/{a}/priority"),
        json!({"priority": 4_000_000_000u64}),
    );
    assert_eq!(st, 400, "{out}");

    let (st, out) = post(
        &ui,
        &format!("{base}/{b}/cancel"),
        json!({"reason": "typo"}),
    );
    assert_eq!((st, &out["outcome"]), (200, &json!("cancelled")), "{out}");
    let j = get(&ui, &format!("{base}/{b}"));
    assert_eq!(j["job"]["state"], "failed");
    assert_eq!(j["job"]["failure"]["code"], "cancelled");
    assert!(
        j["job"]["failure"]["message"]
            .as_str()
            .unwrap()
            .contains("typo"),
        "{j}"
    );
    // A finished job: refused, said so.
    let (st, out) = post(&ui, &format!("{base}/{b}/cancel"), json!({}));
    assert_eq!(st, 409, "{out}");
    assert!(out["error"]["message"]
        .as_str()
        .unwrap()
        .contains("finished"));

    let ro = Ui::start(&[url()], &["--read-only"], &[]);
    let r = ro.request("POST", &format!("{base}/{a}/cancel"), &[ACTION], "{}");
    assert_eq!(r.status, 403);
    assert_eq!(
        rt.block_on(async { queue(&name).await.get(a).await.unwrap().unwrap().state }),
        Some(JobState::Prioritized)
    );
    rt.block_on(async { queue(&name).await.obliterate(true).await.unwrap() });
}

#[test]
fn bulk_actions_act_on_each_selected_job_and_say_what_was_refused() {
    let name = unique("ui-bulk");
    let rt = rt();
    let (delayed, waiting) = rt.block_on(async {
        let q = queue(&name).await;
        let mut delayed = Vec::new();
        for _ in 0..3 {
            delayed.push(
                q.add(
                    "later",
                    json!({}),
                    JobOptions {
                        delay_ms: 3_600_000,
                        ..JobOptions::default()
                    },
                )
                .await
                .unwrap()
                .to_string(),
            );
        }
        let w = q
            .add("now", json!({}), JobOptions::default())
            .await
            .unwrap();
        (delayed, w.to_string())
    });
    let ui = Ui::start(&[url()], &[], &[]);
    let bulk = format!("/api/queues/{name}/bulk");
    let mut ids = delayed.clone();
    ids.push(waiting.clone());
    let (st, out) = post(&ui, &bulk, json!({"action": "promote", "ids": ids}));
    assert_eq!(st, 200, "{out}");
    assert_eq!(
        (out["count"].as_u64(), out["refused"].as_u64()),
        (Some(3), Some(1)),
        "{out}"
    );
    let refused = out["results"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["done"] == false)
        .unwrap();
    assert_eq!(refused["id"], waiting.as_str());
    assert_eq!(refused["outcome"], "waiting");
    let page = get(&ui, &format!("/api/queues/{name}/jobs?state=waiting"));
    assert_eq!(page["in_state"], 4);

    let (st, out) = post(&ui, &bulk, json!({"action": "cancel", "ids": delayed}));
    assert_eq!((st, out["count"].as_u64()), (200, Some(3)), "{out}");
    let page = get(&ui, &format!("/api/queues/{name}/jobs?state=failed"));
    assert_eq!(page["in_state"], 3);
    let (st, out) = post(&ui, &bulk, json!({"action": "retry", "ids": delayed}));
    assert_eq!((st, out["count"].as_u64()), (200, Some(3)), "{out}");
    let (st, out) = post(&ui, &bulk, json!({"action": "remove", "ids": ids}));
    assert_eq!((st, out["count"].as_u64()), (200, Some(4)), "{out}");
    assert_eq!(
        get(&ui, &format!("/api/queues/{name}/jobs"))["summary"]["counts"]["waiting"],
        0
    );

    // Bounds and bad input: nothing is done.
    let many: Vec<String> = (0..201).map(|_| waiting.clone()).collect();
    let (st, out) = post(&ui, &bulk, json!({"action": "remove", "ids": many}));
    assert_eq!(
        (st, &out["error"]["code"]),
        (400, &json!("invalid_option")),
        "{out}"
    );
    let (st, out) = post(
        &ui,
        &bulk,
        json!({"action": "remove", "ids": [waiting, "not an id"]}),
    );
    assert_eq!(st, 400, "{out}");
    let (st, out) = post(
        &ui,
        &bulk,
        json!({"action": "explode", "ids": [delayed[0]]}),
    );
    assert_eq!(
        (st, &out["error"]["code"]),
        (400, &json!("invalid_option")),
        "{out}"
    );
    let ro = Ui::start(&[url()], &["--read-only"], &[]);
    let r = ro.request(
        "POST",
        &bulk,
        &[ACTION],
        &json!({"action": "remove", "ids": [delayed[0]]}).to_string(),
    );
    assert_eq!(r.status, 403);
    rt.block_on(async { queue(&name).await.obliterate(true).await.unwrap() });
}

#[test]
fn bulk_priority_sets_each_jobs_priority_and_reports_each_jobs_error() {
    let name = unique("ui-bulk-prio");
    let rt = rt();
    let (ids, gone, broken, unselected) = rt.block_on(async {
        let q = queue(&name).await;
        let mut ids = Vec::new();
        for i in 0..5 {
            ids.push(
                q.add(&format!("p-{i}"), json!({}), JobOptions::default())
                    .await
                    .unwrap(),
            );
        }
        // One removed since it was selected; one (delayed, so no page of this test reads it)
        // whose record an old writer left unreadable and marked finished, so that telling why it
        // was refused fails: an error, not a refusal.
        let gone = ids.remove(3);
        q.remove(gone).await.unwrap();
        let unselected = ids.remove(3);
        let broken = q
            .add(
                "p-broken",
                json!({}),
                JobOptions {
                    delay_ms: 3_600_000,
                    ..JobOptions::default()
                },
            )
            .await
            .unwrap();
        let record = q.name().job_key(broken, JobPart::Record);
        emq_harness::shared_standalone()
            .cli(&["HSET", record.as_str(), "data", "{oops", "finished_ms", "1"])
            .unwrap();
        (ids, gone, broken, unselected)
    });
    let ui = Ui::start(&[url()], &[], &[]);
    let bulk = format!("/api/queues/{name}/bulk");
    let mut named: Vec<String> = ids.iter().map(|i| i.to_string()).collect();
    named.insert(1, broken.to_string());
    named.push(gone.to_string());
    let (st, out) = post(
        &ui,
        &bulk,
        json!({"action": "priority", "priority": 7, "ids": named}),
    );
    assert_eq!(st, 200, "{out}");
    assert_eq!(
        (
            out["count"].as_u64(),
            out["refused"].as_u64(),
            out["errors"].as_u64()
        ),
        (Some(3), Some(2), Some(1)),
        "{out}"
    );
    let results = out["results"].as_array().unwrap();
    assert_eq!(results.len(), 5, "{out}");
    let of = |id: emq::JobId| {
        results
            .iter()
            .find(|r| r["id"] == id.to_string().as_str())
            .unwrap_or_else(|| panic!("{id} not reported: {out}"))
    };
    for id in &ids {
        assert_eq!(
            (&of(*id)["done"], &of(*id)["outcome"]),
            (&json!(true), &json!("moved"))
        );
    }
    assert_eq!(of(gone)["outcome"], "not_found");
    let err = of(broken);
    assert_eq!(
        (&err["done"], &err["outcome"]),
        (&json!(false), &json!("error"))
    );
    assert_eq!(err["error"]["code"], "invalid_payload", "{err}");
    assert!(
        err["error"]["message"]
            .as_str()
            .unwrap()
            .contains("cannot be read back"),
        "{err}"
    );
    // Read back: the three moved with the new priority (the job after the error too).
    let page = get(&ui, &format!("/api/queues/{name}/jobs?state=prioritized"));
    let mut listed: Vec<(String, u64)> = page["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|j| {
            (
                j["id"].as_str().unwrap().to_string(),
                j["priority"].as_u64().unwrap(),
            )
        })
        .collect();
    listed.sort();
    let mut want: Vec<(String, u64)> = ids.iter().map(|i| (i.to_string(), 7)).collect();
    want.sort();
    assert_eq!(listed, want, "{page}");

    // A missing or out-of-range priority is refused before any job is touched.
    for body in [
        json!({"action": "priority", "ids": [ids[0].to_string()]}),
        json!({"action": "priority", "priority": 3_000_000, "ids": [ids[0].to_string()]}),
    ] {
        let (st, out) = post(&ui, &bulk, body);
        assert_eq!(
            (st, &out["error"]["code"]),
            (400, &json!("invalid_option")),
            "{out}"
        );
    }
    let (p, other) = rt.block_on(async {
        let q = queue(&name).await;
        (
            q.get(ids[0]).await.unwrap().unwrap(),
            q.get(unselected).await.unwrap().unwrap(),
        )
    });
    assert_eq!(p.priority, 7);
    // A job not selected is left as it was.
    assert_eq!((other.state, other.priority), (Some(JobState::Waiting), 0));
    rt.block_on(async { queue(&name).await.obliterate(true).await.unwrap() });
}

#[test]
fn find_by_id_by_dedup_key_and_by_name_in_a_bounded_scan() {
    let name = unique("ui-find");
    let rt = rt();
    let (held, needle) = rt.block_on(async {
        let q = queue(&name).await;
        let held = q
            .add(
                "order",
                json!({}),
                JobOptions {
                    dedup: Some("order-42 <b>".into()),
                    ..JobOptions::default()
                },
            )
            .await
            .unwrap();
        // 6,000 jobs named "filler", then one "Needle-in-hay" and 30 "alpha-N".
        for _ in 0..6 {
            let jobs = (0..1000)
                .map(|i| NewJob {
                    name: "filler".into(),
                    data: json!({ "i": i }),
                    options: JobOptions::default(),
                })
                .collect();
            q.add_bulk(jobs).await.unwrap();
        }
        let needle = q
            .add("Needle-in-hay", json!({}), JobOptions::default())
            .await
            .unwrap();
        for i in 0..30 {
            q.add(&format!("alpha-{i}"), json!({}), JobOptions::default())
                .await
                .unwrap();
        }
        (held, needle)
    });
    let ui = Ui::start(&[url()], &[], &[]);
    let find = |q: &str| get(&ui, &format!("/api/queues/{name}/find?{q}"));

    let by_id = find(&format!("by=id&text={held}"));
    assert_eq!(ids_of(&by_id), [held.to_string()]);
    let r = ui.request(
        "GET",
        &format!("/api/queues/{name}/find?by=id&text=nope"),
        &[],
        "",
    );
    assert_eq!(r.status, 400, "{}", r.body);

    let by_key = find("by=dedup&text=order-42%20%3Cb%3E");
    assert_eq!(ids_of(&by_key), [held.to_string()], "{by_key}");
    assert!(ids_of(&find("by=dedup&text=order-43")).is_empty());
    assert!(
        ids_of(&find("by=dedup&text=order-42")).is_empty(),
        "exact, not a prefix"
    );

    // The name scan reads at most 5,000 ids a call (oldest first in waiting): the needle, added
    // after 6,001 jobs, is not in the first window.
    let first = find("by=name&text=needle&state=waiting");
    assert!(ids_of(&first).is_empty(), "{}", first["scan"]);
    assert_eq!(first["scan"]["scanned"], 5000);
    assert_eq!(first["scan"]["next_offset"], 5000);
    assert_eq!(first["scan"]["in_state"], 6032);
    let second = find("by=name&text=needle&state=waiting&offset=5000");
    assert_eq!(ids_of(&second), [needle.to_string()], "{}", second["scan"]);
    assert_eq!(second["scan"]["scanned"], 1032);
    assert!(second["scan"]["next_offset"].is_null());

    // At most 25 matches a call; the next call goes on after the last.
    let a1 = find("by=name&text=ALPHA&state=waiting&offset=5000");
    assert_eq!(ids_of(&a1).len(), 25, "{}", a1["scan"]);
    let next = a1["scan"]["next_offset"].as_u64().unwrap();
    let a2 = find(&format!("by=name&text=alpha&state=waiting&offset={next}"));
    assert_eq!(ids_of(&a2).len(), 5, "{}", a2["scan"]);
    assert!(a2["scan"]["next_offset"].is_null());
    let mut all = ids_of(&a1);
    all.extend(ids_of(&a2));
    all.sort();
    all.dedup();
    assert_eq!(all.len(), 30);

    // A job added in a batch: its timeline finds it in the batch's one entry.
    let filler = ids_of(&find("by=name&text=filler&state=waiting"))[0].clone();
    let page = get(&ui, &format!("/api/queues/{name}/jobs/{filler}"));
    assert_eq!(
        page["timeline"]["events"][0]["kind"], "added",
        "{}",
        page["timeline"]
    );
    assert_eq!(page["timeline"]["events"].as_array().unwrap().len(), 1);

    let r = ui.request(
        "GET",
        &format!("/api/queues/{name}/find?by=name&text=%20"),
        &[],
        "",
    );
    assert_eq!(r.status, 400, "{}", r.body);
    let r = ui.request(
        "GET",
        &format!("/api/queues/{name}/find?by=data&text=x"),
        &[],
        "",
    );
    assert_eq!(r.status, 400, "{}", r.body);
    rt.block_on(async { queue(&name).await.obliterate(true).await.unwrap() });
}

#[test]
fn schedulers_are_listed_with_next_runs_and_created_edited_removed() {
    let name = unique("ui-sched");
    let ui = Ui::start(&[url()], &[], &[]);
    let base = format!("/api/queues/{name}/schedulers");
    let (st, out) = post(
        &ui,
        &format!("{base}/morning/upsert"),
        json!({"name": "report", "data": "{\"to\": \"ops\"}", "cron": "0 9 * * *",
               "tz": "Europe/Berlin", "limit": 3, "options": {"priority": 2}}),
    );
    assert_eq!((st, &out["created"]), (200, &json!(true)), "{out}");
    let all = get(&ui, "/api/schedulers");
    let mine: Vec<&Value> = all["schedulers"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["queue"] == name.as_str())
        .collect();
    assert_eq!(mine.len(), 1, "{all}");
    let s = mine[0];
    assert_eq!(
        (&s["id"], &s["cron"], &s["tz"], &s["limit"]),
        (
            &json!("morning"),
            &json!("0 9 * * *"),
            &json!("Europe/Berlin"),
            &json!(3)
        )
    );
    let runs: Vec<u64> = s["next_runs_ms"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_u64().unwrap())
        .collect();
    assert_eq!(runs.len(), 3, "limit 3: {s}");
    // Each at 09:00 Berlin: on the hour in UTC, to the ms (the first is the stored due time, not
    // "now + next_in_ms" from another read of the clock).
    assert!(runs.iter().all(|r| r % 3_600_000 == 0), "{runs:?}");
    for w in runs.windows(2) {
        // A day apart, except across a daylight-saving change (23 or 25 hours).
        assert!(
            [82_800_000, 86_400_000, 90_000_000].contains(&(w[1] - w[0])),
            "{runs:?}"
        );
    }
    let spec = get(&ui, &format!("{base}/morning"));
    assert_eq!(spec["spec"]["data"], json!({"to": "ops"}));
    assert_eq!(spec["spec"]["opts"]["priority"], 2);

    // Edit: every 10 minutes, ending in an hour.
    let (st, out) = post(
        &ui,
        &format!("{base}/morning/upsert"),
        json!({"name": "report", "every_ms": 600_000, "end_after_ms": 3_600_000}),
    );
    assert_eq!((st, &out["created"]), (200, &json!(false)), "{out}");
    let all = get(&ui, "/api/schedulers");
    let s = all["schedulers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["queue"] == name.as_str())
        .unwrap()
        .clone();
    assert_eq!(s["every_ms"], 600_000);
    assert!(s["cron"].is_null());
    let end = s["end_ms"].as_u64().unwrap();
    let runs: Vec<u64> = s["next_runs_ms"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_u64().unwrap())
        .collect();
    assert_eq!(runs.len(), 5, "{s}");
    assert!(runs.iter().all(|r| *r <= end));

    // Bad input is refused by the core's checks, with a stable code.
    for bad in [
        json!({"name": "r", "cron": "61 * * * *"}),
        json!({"name": "r", "cron": "* * * * *", "tz": "Mars/Olympus"}),
        json!({"name": "r"}),
        json!({"name": "", "every_ms": 1000}),
        json!({"name": "r", "every_ms": 1000, "options": {"attempts": 0}}),
    ] {
        let (st, out) = post(&ui, &format!("{base}/bad/upsert"), bad.clone());
        assert_eq!(
            (st, &out["error"]["code"]),
            (400, &json!("invalid_option")),
            "{bad}: {out}"
        );
    }
    let (st, out) = post(
        &ui,
        &format!("{base}/bad/upsert"),
        json!({"name": "r", "every_ms": 1000, "data": "{oops"}),
    );
    assert_eq!(
        (st, &out["error"]["code"]),
        (400, &json!("invalid_payload")),
        "{out}"
    );

    let ro = Ui::start(&[url()], &["--read-only"], &[]);
    let r = ro.request("POST", &format!("{base}/morning/remove"), &[ACTION], "{}");
    assert_eq!(r.status, 403);
    let (st, out) = post(&ui, &format!("{base}/morning/remove"), json!({}));
    assert_eq!((st, &out["existed"]), (200, &json!(true)), "{out}");
    let r = ui.request("GET", &format!("{base}/morning"), &[], "");
    assert_eq!(r.status, 404);
    rt().block_on(async { queue(&name).await.obliterate(true).await.unwrap() });
}

#[test]
fn on_the_cluster_find_flow_bulk_and_schedulers_work_across_nodes() {
    let urls = emq_harness::shared_cluster().urls();
    // Eight queues, so parents and children land on different nodes.
    let names: Vec<String> = (0..8).map(|_| unique("ui-clops")).collect();
    let rt = rt();
    let flows = rt.block_on(async {
        let q = Queue::connect(ConnectOptions::seeds(urls.clone()), &names[0])
            .await
            .unwrap();
        let mut flows = Vec::new();
        for pair in names.chunks(2) {
            let ids = q
                .add_flow(FlowJob {
                    queue: pair[0].clone(),
                    name: "parent".into(),
                    data: json!({}),
                    options: JobOptions::default(),
                    children: vec![FlowJob {
                        queue: pair[1].clone(),
                        name: "child-x".into(),
                        data: json!({}),
                        options: JobOptions {
                            dedup: Some(format!("key-{}", pair[1])),
                            ..JobOptions::default()
                        },
                        children: vec![],
                    }],
                })
                .await
                .unwrap();
            flows.push(ids);
        }
        flows
    });
    let ui = Ui::start(&urls, &[], &[]);
    for (f, pair) in flows.iter().zip(names.chunks(2)) {
        let (p, c) = (&pair[0], &pair[1]);
        let page = get(&ui, &format!("/api/queues/{p}/jobs/{}", f.id));
        assert_eq!(page["flow"]["children"][0]["state"], "waiting", "{page}");
        let child = get(&ui, &format!("/api/queues/{c}/jobs/{}", f.children[0].id));
        assert_eq!(
            child["flow"]["parent"]["state"], "waiting-children",
            "{child}"
        );
        assert_eq!(child["timeline"]["events"][0]["kind"], "added");
        let by_name = get(
            &ui,
            &format!("/api/queues/{c}/find?by=name&text=child&state=waiting"),
        );
        assert_eq!(ids_of(&by_name), [f.children[0].id.to_string()]);
        let by_key = get(&ui, &format!("/api/queues/{c}/find?by=dedup&text=key-{c}"));
        assert_eq!(ids_of(&by_key), [f.children[0].id.to_string()]);
        let (st, out) = post(
            &ui,
            &format!("/api/queues/{c}/bulk"),
            json!({"action": "priority", "priority": 2, "ids": [f.children[0].id.to_string()]}),
        );
        assert_eq!((st, out["count"].as_u64()), (200, Some(1)), "{out}");
        let (st, out) = post(
            &ui,
            &format!("/api/queues/{p}/schedulers/s/upsert"),
            json!({"name": "tick", "every_ms": 60_000}),
        );
        assert_eq!(st, 200, "{out}");
    }
    let all = get(&ui, "/api/schedulers");
    for pair in names.chunks(2) {
        let s = all["schedulers"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["queue"] == pair[0].as_str())
            .unwrap_or_else(|| panic!("{} not listed: {all}", pair[0]));
        assert_eq!(s["next_runs_ms"].as_array().unwrap().len(), 5);
    }
    rt.block_on(async {
        let q = Queue::connect(ConnectOptions::seeds(urls.clone()), &names[0])
            .await
            .unwrap();
        for n in &names {
            q.queue(n).unwrap().obliterate(true).await.unwrap();
        }
    });
}

async fn add_grouped(q: &Queue, group: &str, n: usize) {
    for i in 0..n {
        q.add(
            "job",
            json!({ "i": i }),
            JobOptions {
                group: Some(group.into()),
                ..JobOptions::default()
            },
        )
        .await
        .unwrap();
    }
}

async fn group_info(q: &Queue, name: &str) -> emq::GroupInfo {
    q.groups(0, 1_000)
        .await
        .unwrap()
        .into_iter()
        .find(|g| g.name == name)
        .unwrap_or_else(|| panic!("no group {name}"))
}

fn group_names(v: &Value) -> Vec<&str> {
    v["groups"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| g["name"].as_str().unwrap())
        .collect()
}

#[test]
fn groups_are_listed_sorted_and_paused_weighed_and_capped_through_the_api() {
    let name = unique("ui-groups");
    let rt = rt();
    let q = rt.block_on(async {
        let q = queue(&name).await;
        add_grouped(&q, "zeta", 4).await;
        add_grouped(&q, "alpha", 1).await;
        add_grouped(&q, "mid", 2).await;
        q.pause_group("mid").await.unwrap();
        q
    });
    let ui = Ui::start(&[url()], &[], &[]);
    let base = format!("/api/queues/{name}/groups");

    // The list: by backlog unless asked otherwise, every field, the queue's summary, paged.
    let d = get(&ui, &base);
    assert_eq!(group_names(&d), ["zeta", "mid", "alpha"], "{d}");
    assert_eq!((&d["sort"], &d["total"]), (&json!("waiting"), &json!(3)));
    assert_eq!((&d["offset"], &d["limit"]), (&json!(0), &json!(50)));
    assert_eq!(d["truncated"], false);
    assert_eq!(
        d["groups"][1],
        json!({"name": "mid", "waiting": 2, "running": 0, "weight": 1, "concurrency": null,
               "max_waiting": null, "paused": true})
    );
    assert_eq!(d["summary"]["queue"], name.as_str());
    assert_eq!(d["summary"]["counts"]["waiting"], 7, "{d}");
    assert_eq!(d["read_only"], false);
    let d = get(&ui, &format!("{base}?sort=name"));
    assert_eq!(group_names(&d), ["alpha", "mid", "zeta"]);
    assert!(d["total"].is_null(), "by name the core pages: {d}");
    let d = get(&ui, &format!("{base}?sort=running"));
    assert_eq!(
        group_names(&d),
        ["alpha", "mid", "zeta"],
        "ties in name order"
    );
    let d = get(&ui, &format!("{base}?offset=1&limit=1"));
    assert_eq!(group_names(&d), ["mid"]);
    let r = ui.request("GET", &format!("{base}?sort=size"), &[], "");
    assert_eq!(r.status, 400, "{}", r.body);
    assert_eq!(r.json()["error"]["code"], "invalid_option");

    // pause and resume, read back from the core.
    let (st, out) = post(&ui, &format!("{base}/pause"), json!({"group": "alpha"}));
    assert_eq!(
        (st, &out),
        (
            200,
            &json!({"ok": true, "action": "pause", "group": "alpha"})
        )
    );
    rt.block_on(async { assert!(group_info(&q, "alpha").await.paused) });
    let (st, _) = post(&ui, &format!("{base}/resume"), json!({"group": "mid"}));
    assert_eq!(st, 200);
    rt.block_on(async { assert!(!group_info(&q, "mid").await.paused) });
    let d = get(&ui, &format!("{base}?sort=name"));
    assert_eq!(d["groups"][0]["paused"], true);
    assert_eq!(d["groups"][1]["paused"], false);

    // weight.
    let (st, out) = post(
        &ui,
        &format!("{base}/weight"),
        json!({"group": "zeta", "weight": 5}),
    );
    assert_eq!(st, 200, "{out}");
    rt.block_on(async { assert_eq!(group_info(&q, "zeta").await.weight, 5) });

    // concurrency and max-waiting: one group's own cap, the default (no group), lifted (null).
    for (body, want_zeta, want_alpha) in [
        (json!({"limit": 3}), Some(3), Some(3)),
        (json!({"group": "zeta", "limit": 1}), Some(1), Some(3)),
        (json!({"group": "zeta", "limit": null}), Some(3), Some(3)),
        (json!({"group": null, "limit": null}), None, None),
    ] {
        let (st, out) = post(&ui, &format!("{base}/concurrency"), body.clone());
        assert_eq!(st, 200, "{body}: {out}");
        rt.block_on(async {
            assert_eq!(
                group_info(&q, "zeta").await.concurrency,
                want_zeta,
                "{body}"
            );
            assert_eq!(
                group_info(&q, "alpha").await.concurrency,
                want_alpha,
                "{body}"
            );
        });
    }
    let (st, out) = post(
        &ui,
        &format!("{base}/max-waiting"),
        json!({"group": "alpha", "limit": 1}),
    );
    assert_eq!(st, 200, "{out}");
    rt.block_on(async {
        assert_eq!(group_info(&q, "alpha").await.max_waiting, Some(1));
        // alpha has its one job waiting: the next add is refused by the cap just set.
        let err = q
            .add(
                "job",
                json!({}),
                JobOptions {
                    group: Some("alpha".into()),
                    ..JobOptions::default()
                },
            )
            .await
            .unwrap_err();
        assert_eq!(err.code(), emq::ErrorCode::GroupFull, "{err}");
    });

    // Bad input: the core's bounds, a typed body (unknown or missing fields, not JSON), an
    // unknown action; all with a stable code, nothing changed.
    for (action, body, want) in [
        ("weight", json!({"group": "zeta", "weight": 0}), "1 to 1000"),
        (
            "weight",
            json!({"group": "zeta", "weight": 5_000_000_000u64}),
            "1 to 1000",
        ),
        (
            "weight",
            json!({"group": "zeta", "weight": 2, "wieght": 3}),
            "unknown field `wieght`",
        ),
        ("weight", json!({"group": "zeta"}), "missing field `weight`"),
        ("pause", json!({}), "missing field `group`"),
        ("pause", json!({"group": ""}), "1 to 256 bytes"),
        (
            "concurrency",
            json!({"group": "zeta"}),
            "missing field `limit`",
        ),
        ("concurrency", json!({"limit": 0}), "from 1 to"),
        (
            "max-waiting",
            json!({"limit": -1}),
            "the body of max-waiting",
        ),
        ("explode", json!({}), "no group action"),
    ] {
        let (st, out) = post(&ui, &format!("{base}/{action}"), body.clone());
        assert_eq!(
            (st, &out["error"]["code"]),
            (400, &json!("invalid_option")),
            "{action} {body}: {out}"
        );
        let message = out["error"]["message"].as_str().unwrap();
        assert!(message.contains(want), "{action} {body}: {message}");
    }
    let r = ui.request("POST", &format!("{base}/pause"), &[ACTION], "{oops");
    assert_eq!(r.status, 400, "{}", r.body);
    assert_eq!(r.json()["error"]["code"], "invalid_option");
    rt.block_on(async {
        let zeta = group_info(&q, "zeta").await;
        assert_eq!((zeta.weight, zeta.concurrency), (5, None));
    });

    // The dashboard's security model holds for the group actions: the custom header, the same
    // origin, read-only, the token.
    let r = ui.request("POST", &format!("{base}/pause"), &[], r#"{"group":"zeta"}"#);
    assert_eq!(r.status, 403);
    assert_eq!(r.json()["error"]["code"], "csrf");
    let r = ui.request(
        "POST",
        &format!("{base}/pause"),
        &[ACTION, ("Origin", "http://evil.example")],
        r#"{"group":"zeta"}"#,
    );
    assert_eq!(r.status, 403);
    assert_eq!(r.json()["error"]["code"], "csrf");
    let ro = Ui::start(&[url()], &["--read-only"], &[]);
    assert_eq!(get(&ro, &base)["read_only"], true);
    let r = ro.request(
        "POST",
        &format!("{base}/weight"),
        &[ACTION],
        r#"{"group":"zeta","weight":9}"#,
    );
    assert_eq!(r.status, 403);
    assert_eq!(r.json()["error"]["code"], "read_only");
    let token = "groups-test-token";
    let locked = Ui::start(&[url()], &["--token", token], &[]);
    assert_eq!(locked.request("GET", &base, &[], "").status, 401);
    let bearer = format!("Bearer {token}");
    let r = locked.request(
        "POST",
        &format!("{base}/pause"),
        &[ACTION, ("Authorization", &bearer)],
        r#"{"group":"zeta"}"#,
    );
    assert_eq!(r.status, 200, "{}", r.body);
    rt.block_on(async {
        let zeta = group_info(&q, "zeta").await;
        assert_eq!(zeta.weight, 5, "read-only changed nothing");
        assert!(zeta.paused, "the token's request went through");
        q.obliterate(true).await.unwrap();
    });
}
