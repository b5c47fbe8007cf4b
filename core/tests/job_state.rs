//! Where a job is (`Queue::get`, `job_state.lua`) and a page of one state (`Queue::list`), on both
//! topologies. `job_state.lua` searches a wait list from the end whose id is nearer in time to the
//! one sought: every waiting job is found whichever end that is, including a LIFO job (the newest
//! id at the oldest end) and jobs moved to paused. `list` reads records without looking the state
//! up: each job carries the state it was listed in.

mod common;

use common::{audit_ok, both, jobs, queue_on};
use emq::{JobOptions, JobState};
use serde_json::json;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_waiting_job_is_found_from_either_end_of_its_list() {
    for (topology, store) in both().await {
        let q = queue_on(&store, "job-state").await;
        let mut ids = q.add_bulk(jobs("n", 300)).await.unwrap();
        // The newest id, at the end the oldest jobs are taken from.
        let lifo = q
            .add(
                "lifo",
                json!({}),
                JobOptions {
                    lifo: true,
                    ..JobOptions::default()
                },
            )
            .await
            .unwrap();
        ids.push(lifo);
        for (what, state) in [("waiting", JobState::Waiting), ("paused", JobState::Paused)] {
            for &i in &[0usize, 1, 149, 150, 298, 299, 300] {
                let job = q.get(ids[i]).await.unwrap().expect("the job");
                assert_eq!(job.state, Some(state), "{topology} {what}: job {i}");
            }
            let page = q.list(state, 0, 400).await.unwrap();
            assert_eq!(page.len(), 301, "{topology} {what}");
            assert!(page.iter().all(|j| j.state == Some(state)), "{topology}");
            q.pause().await.unwrap();
        }
        q.remove(ids[150]).await.unwrap();
        assert!(q.get(ids[150]).await.unwrap().is_none(), "{topology}");
        assert_eq!(q.list(JobState::Paused, 0, 400).await.unwrap().len(), 300);
        audit_ok(&q).await;
        q.obliterate(true).await.unwrap();
    }
}
