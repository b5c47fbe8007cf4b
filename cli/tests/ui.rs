//! `emq ui` over HTTP, no browser: safe by default (loopback, token, CSRF header and origin,
//! read-only, no password anywhere) and the JSON the page reads. The browser tests are in
//! `ui_browser.rs` (run by `cli/ui-test/run.sh`).

use emq::{ConnectOptions, JobOptions, JobPart, NewJob, Queue};
use emq_harness::{RedisServer, ServerOptions};
use serde_json::json;
use std::time::Duration;

mod common;
mod ui_support;
use ui_support::Ui;

fn standalone() -> Vec<String> {
    vec![emq_harness::shared_standalone().url()]
}

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

const ACTION: (&str, &str) = ("X-EMQ-UI", "1");

#[test]
fn a_non_loopback_listen_without_a_token_refuses_to_start() {
    let url = emq_harness::shared_standalone().url();
    for listen in ["0.0.0.0:0", "[::]:0"] {
        let out = common::run_emq(
            &["--url", &url, "ui", "--listen", listen],
            &[],
            Duration::from_secs(20),
        );
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{listen}: {stderr}");
        assert!(stderr.contains("error[invalid_option]"), "{stderr}");
        assert!(
            stderr.contains("--token") && stderr.contains("EMQ_UI_TOKEN"),
            "{stderr}"
        );
    }
}

#[test]
fn with_a_token_every_request_needs_it() {
    let token = "a-long-test-token";
    let ui = Ui::start(&standalone(), &[], &[("EMQ_UI_TOKEN", token)]);
    for path in ["/", "/api/overview", "/api/events", "/app.js"] {
        assert_eq!(ui.request("GET", path, &[], "").status, 401, "{path}");
    }
    let wrong = ui.request(
        "GET",
        "/api/overview",
        &[("Authorization", "Bearer a-long-test-tokex")],
        "",
    );
    assert_eq!(wrong.status, 401);
    let bearer = format!("Bearer {token}");
    let ok = ui.request("GET", "/api/overview", &[("Authorization", &bearer)], "");
    assert_eq!(ok.status, 200, "{ok:?}");
    // /login sets an HttpOnly, SameSite=Strict cookie that then opens every page.
    let login = ui.request("GET", &format!("/login?token={token}"), &[], "");
    assert_eq!(login.status, 303, "{login:?}");
    let cookie_line = login
        .head
        .lines()
        .find(|l| l.to_ascii_lowercase().starts_with("set-cookie:"))
        .expect("a cookie");
    assert!(
        cookie_line.contains("HttpOnly") && cookie_line.contains("SameSite=Strict"),
        "{cookie_line}"
    );
    let cookie = format!("emq_ui_token={token}");
    assert_eq!(
        ui.request("GET", "/", &[("Cookie", &cookie)], "").status,
        200
    );
    assert_eq!(ui.request("GET", "/login?token=nope", &[], "").status, 401);
}

#[test]
fn without_a_token_only_a_loopback_host_is_answered() {
    let ui = Ui::start(&standalone(), &[], &[]);
    assert_eq!(ui.request("GET", "/", &[], "").status, 200);
    let rebound = ui.request(
        "GET",
        "/api/overview",
        &[("Host", "rebind.example:7777")],
        "",
    );
    assert_eq!(rebound.status, 403, "{rebound:?}");
    // The page goes out with a strict content policy.
    let page = ui.request("GET", "/", &[], "");
    assert!(
        page.head
            .to_ascii_lowercase()
            .contains("content-security-policy: default-src 'self'"),
        "{}",
        page.head
    );
}

#[test]
fn actions_need_the_header_and_the_origin_and_read_only_refuses_them() {
    let name = unique("ui-act");
    let url = emq_harness::shared_standalone().url();
    let rt = rt();
    let q = rt.block_on(async {
        let q = Queue::connect(ConnectOptions::new(url.clone()), &name)
            .await
            .unwrap();
        q.add("x", json!({}), JobOptions::default()).await.unwrap();
        q
    });
    let paused = || rt.block_on(q.is_paused()).unwrap();
    let ui = Ui::start(&standalone(), &[], &[]);
    let path = format!("/api/queues/{name}/pause");
    let plain = ui.request("POST", &path, &[], "{}");
    assert_eq!(plain.status, 403, "{plain:?}");
    assert_eq!(plain.json()["error"]["code"], "csrf");
    let cross = ui.request(
        "POST",
        &path,
        &[ACTION, ("Origin", "http://evil.example")],
        "{}",
    );
    assert_eq!(cross.status, 403);
    assert_eq!(cross.json()["error"]["code"], "csrf");
    assert!(!paused(), "a refused action changed the queue");
    // A GET never acts.
    assert_eq!(ui.request("GET", &path, &[], "").status, 405);
    let origin = ui.base();
    let ok = ui.request("POST", &path, &[ACTION, ("Origin", &origin)], "{}");
    assert_eq!(ok.status, 200, "{ok:?}");
    assert!(paused());

    let ro = Ui::start(&standalone(), &["--read-only"], &[]);
    let resume = format!("/api/queues/{name}/resume");
    let refused = ro.request("POST", &resume, &[ACTION], "{}");
    assert_eq!(refused.status, 403, "{refused:?}");
    assert_eq!(refused.json()["error"]["code"], "read_only");
    assert!(paused(), "read-only resumed the queue");
    assert_eq!(
        ro.request("GET", "/api/overview", &[], "").json()["read_only"],
        true
    );
    rt.block_on(q.obliterate(true)).unwrap();
}

#[test]
fn the_datastore_password_appears_nowhere() {
    let secret = "hunter2-very-secret";
    let server = RedisServer::start_with(ServerOptions {
        extra_args: vec!["--requirepass".into(), secret.into()],
        ..ServerOptions::default()
    })
    .unwrap();
    let url = format!("redis://:{secret}@127.0.0.1:{}", server.port());
    let name = unique("ui-pw");
    rt().block_on(async {
        let q = Queue::connect(ConnectOptions::new(url.clone()), &name)
            .await
            .unwrap();
        q.add("x", json!({}), JobOptions::default()).await.unwrap();
    });
    let ui = Ui::start(std::slice::from_ref(&url), &[], &[]);
    let overview = ui.request("GET", "/api/overview", &[], "");
    assert_eq!(overview.status, 200);
    assert_eq!(
        overview.json()["datastore"],
        format!("redis://:***@127.0.0.1:{}", server.port())
    );
    for (method, path) in [
        ("GET", "/"),
        ("GET", "/api/workers"),
        ("GET", "/api/queues/a:b/jobs"),
        ("GET", &format!("/api/queues/{name}/jobs/nonsense") as &str),
        ("GET", &format!("/api/queues/{name}/jobs?state=failed")),
    ] {
        let r = ui.request(method, path, &[], "");
        assert!(
            !r.body.contains(secret) && !r.head.contains(secret),
            "{path}: {r:?}"
        );
    }
    assert!(ui.stderr().contains("redis://:***@"), "{}", ui.stderr());
    assert!(!ui.stderr().contains(secret), "{}", ui.stderr());

    // A wrong password: the error names the URL without it.
    let wrong = format!("redis://:wrong-pass-123@127.0.0.1:{}", server.port());
    let out = common::run_emq(
        &["--url", &wrong, "ui", "--listen", "127.0.0.1:0"],
        &[],
        Duration::from_secs(20),
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert!(!stderr.contains("wrong-pass-123"), "{stderr}");
}

#[test]
fn the_api_pages_jobs_newest_first_and_reads_one_job() {
    let name = unique("ui-api");
    let url = emq_harness::shared_standalone().url();
    let ids = rt().block_on(async {
        let q = Queue::connect(ConnectOptions::new(url.clone()), &name)
            .await
            .unwrap();
        let mut ids = Vec::new();
        for i in 0..5 {
            ids.push(
                q.add("n", json!({ "i": i }), JobOptions::default())
                    .await
                    .unwrap()
                    .to_string(),
            );
        }
        q.log(emq::JobId::parse(&ids[0]).unwrap(), "hello log")
            .await
            .unwrap();
        ids
    });
    let ui = Ui::start(&standalone(), &[], &[]);
    let page = ui
        .request(
            "GET",
            &format!("/api/queues/{name}/jobs?state=waiting&offset=0&limit=2"),
            &[],
            "",
        )
        .json();
    assert_eq!(page["in_state"], 5);
    let got: Vec<&str> = page["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|j| j["id"].as_str().unwrap())
        .collect();
    assert_eq!(got, [ids[4].as_str(), ids[3].as_str()], "newest first");
    let next = ui
        .request(
            "GET",
            &format!("/api/queues/{name}/jobs?state=waiting&offset=4&limit=2"),
            &[],
            "",
        )
        .json();
    let got: Vec<&str> = next["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|j| j["id"].as_str().unwrap())
        .collect();
    assert_eq!(got, [ids[0].as_str()]);
    let one = ui
        .request(
            "GET",
            &format!("/api/queues/{name}/jobs/{}", ids[0]),
            &[],
            "",
        )
        .json();
    assert_eq!(one["job"]["data"], json!({"i": 0}));
    assert_eq!(one["logs"], json!(["hello log"]));
    let missing = ui.request("GET", &format!("/api/queues/{name}/jobs/nonsense"), &[], "");
    assert_eq!(missing.status, 400);
    assert_eq!(missing.json()["error"]["code"], "invalid_job_id");
    let overview = ui.request("GET", "/api/overview", &[], "").json();
    let row = overview["queues"]
        .as_array()
        .unwrap()
        .iter()
        .find(|q| q["summary"]["queue"] == name.as_str())
        .expect("listed");
    assert_eq!(row["summary"]["counts"]["waiting"], 5);
}

#[test]
fn on_the_cluster_the_overview_lists_queues_and_actions_work() {
    let urls = emq_harness::shared_cluster().urls();
    let names: Vec<String> = (0..4).map(|_| unique("ui-cl")).collect();
    let rt = rt();
    let queues: Vec<Queue> = rt.block_on(async {
        let first = Queue::connect(ConnectOptions::seeds(urls.clone()), &names[0])
            .await
            .unwrap();
        let mut qs = vec![first.clone()];
        for n in &names[1..] {
            qs.push(first.queue(n).unwrap());
        }
        for q in &qs {
            q.add("x", json!({}), JobOptions::default()).await.unwrap();
        }
        qs
    });
    let ui = Ui::start(&urls, &[], &[]);
    let overview = ui.request("GET", "/api/overview", &[], "").json();
    for n in &names {
        let row = overview["queues"]
            .as_array()
            .unwrap()
            .iter()
            .find(|q| q["summary"]["queue"] == n.as_str())
            .unwrap_or_else(|| panic!("{n} not on the overview"));
        assert_eq!(row["summary"]["counts"]["waiting"], 1);
    }
    for (q, n) in queues.iter().zip(&names) {
        let r = ui.request("POST", &format!("/api/queues/{n}/pause"), &[ACTION], "{}");
        assert_eq!(r.status, 200, "{r:?}");
        assert!(rt.block_on(q.is_paused()).unwrap(), "{n}");
        let page = ui
            .request(
                "GET",
                &format!("/api/queues/{n}/jobs?state=paused"),
                &[],
                "",
            )
            .json();
        assert_eq!(page["jobs"].as_array().unwrap().len(), 1, "{n}: {page}");
    }
    for q in queues {
        rt.block_on(q.obliterate(true)).unwrap();
    }
}

/// Calls of one command (in lower case, as INFO names it) the server has answered so far, those
/// made by scripts included.
fn calls(server: &RedisServer, command: &str) -> u64 {
    let info = server.cli(&["INFO", "commandstats"]).unwrap();
    let prefix = format!("cmdstat_{command}:calls=");
    info.lines()
        .find_map(|l| l.strip_prefix(prefix.as_str()))
        .and_then(|rest| rest.split(',').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or(0)
}

/// Calls of SCAN the server has answered so far.
fn scans(server: &RedisServer) -> u64 {
    calls(server, "scan")
}

fn page_ids(page: &serde_json::Value) -> Vec<String> {
    page["jobs"]
        .as_array()
        .unwrap_or_else(|| panic!("no jobs: {page}"))
        .iter()
        .map(|j| j["id"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn a_page_of_one_state_reads_its_jobs_without_looking_up_where_each_is() {
    // A private server: its command counts are this test's alone.
    let server = RedisServer::start().unwrap();
    let name = unique("ui-listed");
    let rt = rt();
    let ids = rt.block_on(async {
        let q = Queue::connect(ConnectOptions::new(server.url()), &name)
            .await
            .unwrap();
        let jobs = (0..40)
            .map(|i| NewJob {
                name: format!("n-{i}"),
                data: json!({ "i": i }),
                options: JobOptions::default(),
            })
            .collect();
        let ids = q.add_bulk(jobs).await.unwrap();
        // A job removed between a page's two reads: its id is still listed, its record gone.
        let record = q.name().job_key(ids[30], JobPart::Record);
        assert_eq!(server.cli(&["DEL", record.as_str()]).unwrap().trim(), "1");
        ids
    });
    let ui = Ui::start(&[server.url()], &[], &[]);
    let get = |path: &str| {
        let r = ui.request("GET", path, &[], "");
        assert_eq!(r.status, 200, "{path}: {}", r.body);
        r.json()
    };
    // Finding where a waiting job is takes an LPOS on the wait list (job_state.lua), O(its place
    // in the list); a page of waiting jobs needs none.
    let before = calls(&server, "lpos");
    let page = get(&format!(
        "/api/queues/{name}/jobs?state=waiting&offset=5&limit=10"
    ));
    let want: Vec<String> = (25..35)
        .rev()
        .filter(|&i| i != 30)
        .map(|i| ids[i].to_string())
        .collect();
    assert_eq!(
        page_ids(&page),
        want,
        "newest first, the removed one left out"
    );
    assert_eq!(page["in_state"], 40);
    for j in page["jobs"].as_array().unwrap() {
        assert_eq!(j["state"], "waiting", "{j}");
        let i = j["data"]["i"].as_u64().unwrap() as usize;
        assert_eq!(j["id"], ids[i].to_string().as_str(), "{j}");
        assert_eq!(j["name"], format!("n-{i}").as_str());
    }
    // A name search's matches are read the same way: n-3 and n-31..n-39 (n-30 was removed).
    let found = get(&format!(
        "/api/queues/{name}/find?by=name&text=n-3&state=waiting"
    ));
    let mut want: Vec<String> = [3, 31, 32, 33, 34, 35, 36, 37, 38, 39]
        .iter()
        .map(|&i| ids[i].to_string())
        .collect();
    let mut got = page_ids(&found);
    assert!(found["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .all(|j| j["state"] == "waiting"));
    got.sort();
    want.sort();
    assert_eq!(got, want, "{found}");
    assert_eq!(
        calls(&server, "lpos"),
        before,
        "a page of waiting jobs looked up where each one is"
    );
    // A job's own page does look it up (so the count above would have seen it).
    let one = get(&format!("/api/queues/{name}/jobs/{}", ids[0]));
    assert_eq!(one["job"]["state"], "waiting");
    assert!(
        calls(&server, "lpos") > before,
        "the job page's LPOS not counted"
    );
}

#[test]
fn pages_never_scan_the_datastore_even_with_an_empty_registry() {
    let server = RedisServer::start().unwrap();
    let ui = Ui::start(&[server.url()], &[], &[]);
    // The one repair at start (the registry is empty) runs in the background; let it finish.
    let until = std::time::Instant::now() + Duration::from_secs(10);
    while scans(&server) == 0 {
        assert!(std::time::Instant::now() < until, "no repair at start");
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(Duration::from_millis(200));
    let before = scans(&server);
    for path in ["/api/overview", "/api/workers", "/api/overview"] {
        assert_eq!(ui.request("GET", path, &[], "").status, 200, "{path}");
    }
    assert_eq!(scans(&server), before, "a page scanned the datastore");
}

#[test]
fn a_job_whose_record_cannot_be_read_is_shown_as_unreadable_not_a_failed_page() {
    // A record written by hand (or by another tool) with data that is not JSON: `Queue::get` and
    // `list` refuse it with invalid_payload; the pages show it, marked, and the rest of the page.
    let server = RedisServer::start().unwrap();
    let name = unique("ui-unreadable");
    let rt = rt();
    let ids = rt.block_on(async {
        let q = Queue::connect(ConnectOptions::new(server.url()), &name)
            .await
            .unwrap();
        let jobs = (0..3)
            .map(|i| NewJob {
                name: format!("n-{i}"),
                data: json!({ "i": i }),
                options: JobOptions::default(),
            })
            .collect();
        let ids = q.add_bulk(jobs).await.unwrap();
        // The oldest waiting job (the overview reads its age) is the broken one.
        let record = q.name().job_key(ids[0], JobPart::Record);
        server
            .cli(&["HSET", record.as_str(), "data", "{not json"])
            .unwrap();
        assert_eq!(
            q.get(ids[0]).await.unwrap_err().code(),
            emq::ErrorCode::InvalidPayload,
            "the strict read refuses it"
        );
        ids
    });
    let ui = Ui::start(&[server.url()], &[], &[]);
    let get = |path: &str| {
        let r = ui.request("GET", path, &[], "");
        assert_eq!(r.status, 200, "{path}: {}", r.body);
        r.json()
    };
    let overview = get("/api/overview");
    assert!(overview.to_string().contains(&name), "{overview}");
    let page = get(&format!("/api/queues/{name}/jobs?state=waiting"));
    let jobs = page["jobs"].as_array().unwrap();
    assert_eq!(jobs.len(), 3, "{page}");
    let broken = jobs
        .iter()
        .find(|j| j["id"] == ids[0].to_string().as_str())
        .unwrap();
    assert_eq!(broken["unreadable"]["code"], "invalid_payload", "{broken}");
    assert!(broken["data"].is_null());
    for j in jobs
        .iter()
        .filter(|j| j["id"] != ids[0].to_string().as_str())
    {
        assert!(j.get("unreadable").is_none(), "{j}");
    }
    let one = get(&format!("/api/queues/{name}/jobs/{}", ids[0]));
    assert_eq!(one["job"]["unreadable"]["code"], "invalid_payload");
    assert_eq!(one["job"]["state"], "waiting");
    let found = get(&format!("/api/queues/{name}/find?by=id&text={}", ids[0]));
    assert_eq!(found["jobs"][0]["unreadable"]["code"], "invalid_payload");
}
