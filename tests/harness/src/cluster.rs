//! A real Redis Cluster of N masters and 0 replicas on loopback: starts the
//! nodes, joins them (`redis-cli --cluster create` for 3+ masters, CLUSTER
//! ADDSLOTSRANGE/MEET for 1-2, which `--cluster create` refuses), waits until
//! every node reports `cluster_state:ok` and all nodes agree on the owner of
//! all 16384 slots, and records the slot map once.

use std::collections::BTreeSet;
use std::io;
use std::process::Command;
use std::thread;
use std::time::{Duration, Instant};

use crate::cmd;
use crate::resp::Value;
use crate::server::{RedisServer, ServerOptions};

/// Number of hash slots in Redis Cluster.
pub const SLOTS: u16 = 16384;
/// Bound on formation (create + convergence).
pub const CLUSTER_TIMEOUT: Duration = Duration::from_secs(30);

/// One contiguous slot range and the port of the master that owns it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct SlotRange {
    pub start: u16,
    pub end: u16,
    pub port: u16,
}

/// N masters and (with [`RedisCluster::start_with_replicas`]) their replicas; all nodes stopped
/// on drop.
#[derive(Debug)]
pub struct RedisCluster {
    nodes: Vec<RedisServer>,
    slots: Vec<SlotRange>,
}

impl RedisCluster {
    pub fn start(masters: usize) -> io::Result<RedisCluster> {
        Self::start_with_replicas(masters, 0, &[])
    }

    /// `masters` masters with `replicas` replicas each (`redis-cli --cluster create
    /// --cluster-replicas`, so 3+ masters when `replicas > 0`), every node started with
    /// `extra_args` too (e.g. `--cluster-node-timeout 2000` for a quick failover). Returns once
    /// the slot map is agreed and every replica's link to its master is up. `nodes()` lists the
    /// masters first, in the order the slot ranges were assigned by `--cluster create`.
    pub fn start_with_replicas(
        masters: usize,
        replicas: usize,
        extra_args: &[&str],
    ) -> io::Result<RedisCluster> {
        if replicas > 0 && masters < 3 {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "replicas need 3 or more masters (redis-cli --cluster create)",
            ));
        }
        if masters == 0 {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "a cluster needs at least one master",
            ));
        }
        let deadline = Instant::now() + CLUSTER_TIMEOUT;
        let total = masters * (1 + replicas);
        let mut nodes = Vec::with_capacity(total);
        for _ in 0..total {
            nodes.push(RedisServer::start_with(ServerOptions {
                cluster_enabled: true,
                extra_args: extra_args.iter().map(|a| a.to_string()).collect(),
                ..ServerOptions::default()
            })?);
        }
        if masters >= 3 {
            create_with_redis_cli(&nodes, replicas, deadline)?;
        } else {
            create_by_hand(&nodes)?;
        }
        let slots = wait_converged(&nodes, deadline)?;
        if replicas > 0 {
            wait_replicas_linked(&nodes, deadline)?;
        }
        Ok(RedisCluster { nodes, slots })
    }

    /// Seed urls of all masters (`redis://127.0.0.1:PORT`).
    pub fn urls(&self) -> Vec<String> {
        self.nodes.iter().map(RedisServer::url).collect()
    }

    pub fn nodes(&self) -> &[RedisServer] {
        &self.nodes
    }

    /// Url of the master owning `slot`, per CLUSTER SLOTS read once after
    /// start. Panics if `slot >= 16384`.
    pub fn node_for_slot(&self, slot: u16) -> String {
        assert!(slot < SLOTS, "slot {slot} out of range 0..16384");
        let r = self
            .slots
            .iter()
            .find(|r| r.start <= slot && slot <= r.end)
            .expect("slot map covers all slots (checked at start)");
        format!("redis://127.0.0.1:{}", r.port)
    }

    /// Url of the master owning `key` (honours `{hash tags}`).
    pub fn node_for_key(&self, key: &str) -> String {
        self.node_for_slot(key_slot(key.as_bytes()))
    }

    /// The slot map recorded at start, sorted by slot.
    pub fn slot_ranges(&self) -> &[SlotRange] {
        &self.slots
    }

    /// Starts the node on `port` again (same port and dir, so the same `nodes.conf`), after it
    /// was stopped or killed: a master that a failover replaced comes back as a replica of its
    /// successor, with its data from it. `NotFound` when no node has that port.
    pub fn restart_node(&mut self, port: u16) -> io::Result<()> {
        self.nodes
            .iter_mut()
            .find(|n| n.port() == port)
            .ok_or_else(|| io::Error::new(io::ErrorKind::NotFound, format!("no node on {port}")))?
            .restart()
    }

    pub fn stop(&mut self) {
        for n in &mut self.nodes {
            n.stop();
        }
    }
}

fn create_with_redis_cli(
    nodes: &[RedisServer],
    replicas: usize,
    deadline: Instant,
) -> io::Result<()> {
    let mut c = Command::new(cmd::cli_program());
    c.arg("--cluster").arg("create");
    for n in nodes {
        c.arg(format!("127.0.0.1:{}", n.port()));
    }
    c.args(["--cluster-replicas", &replicas.to_string(), "--cluster-yes"]);
    let left = deadline.saturating_duration_since(Instant::now());
    let out = cmd::run_ok(&mut c, left.max(Duration::from_secs(1)))?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    if !stdout.contains("All 16384 slots covered") {
        return Err(io::Error::other(format!(
            "redis-cli --cluster create did not report full coverage:\n{stdout}{}",
            String::from_utf8_lossy(&out.stderr)
        )));
    }
    Ok(())
}

fn expect_ok(node: &RedisServer, args: &[&str]) -> io::Result<()> {
    match node.command(args)? {
        Value::Simple(s) if s == "OK" => Ok(()),
        other => Err(io::Error::other(format!(
            "{args:?} on port {} replied {other:?}",
            node.port()
        ))),
    }
}

/// Splits the slots evenly, assigns them, bumps epochs and MEETs the nodes.
fn create_by_hand(nodes: &[RedisServer]) -> io::Result<()> {
    let n = nodes.len();
    let total = usize::from(SLOTS);
    for (i, node) in nodes.iter().enumerate() {
        let start = i * total / n;
        let end = (i + 1) * total / n - 1;
        expect_ok(
            node,
            &[
                "CLUSTER",
                "ADDSLOTSRANGE",
                &start.to_string(),
                &end.to_string(),
            ],
        )?;
        expect_ok(node, &["CLUSTER", "SET-CONFIG-EPOCH", &(i + 1).to_string()])?;
    }
    let first = nodes[0].port().to_string();
    for node in &nodes[1..] {
        expect_ok(node, &["CLUSTER", "MEET", "127.0.0.1", &first])?;
    }
    Ok(())
}

/// Polls every node until all report cluster_state:ok with all slots ok and
/// all nodes known, and all return the same full slot map.
fn wait_converged(nodes: &[RedisServer], deadline: Instant) -> io::Result<Vec<SlotRange>> {
    let ports: BTreeSet<u16> = nodes.iter().map(RedisServer::port).collect();
    loop {
        let last = match check_once(nodes, &ports) {
            Ok(map) => return Ok(map),
            Err(why) => why,
        };
        if Instant::now() >= deadline {
            return Err(io::Error::new(
                io::ErrorKind::TimedOut,
                format!("cluster did not converge within {CLUSTER_TIMEOUT:?}: {last}"),
            ));
        }
        thread::sleep(Duration::from_millis(100));
    }
}

fn check_once(nodes: &[RedisServer], ports: &BTreeSet<u16>) -> Result<Vec<SlotRange>, String> {
    let mut agreed: Option<Vec<SlotRange>> = None;
    for node in nodes {
        let p = node.port();
        let info = node
            .command(&["CLUSTER", "INFO"])
            .map_err(|e| format!("CLUSTER INFO on {p}: {e}"))?
            .as_text()
            .ok_or_else(|| format!("CLUSTER INFO on {p}: not a string"))?;
        let field = |k: &str| {
            info.lines()
                .find_map(|l| l.strip_prefix(k)?.strip_prefix(':'))
                .map(str::trim)
                .unwrap_or("")
                .to_string()
        };
        if field("cluster_state") != "ok" {
            return Err(format!(
                "node {p}: cluster_state:{}",
                field("cluster_state")
            ));
        }
        if field("cluster_slots_ok") != SLOTS.to_string() {
            return Err(format!(
                "node {p}: cluster_slots_ok:{}",
                field("cluster_slots_ok")
            ));
        }
        if field("cluster_known_nodes") != nodes.len().to_string() {
            return Err(format!(
                "node {p}: cluster_known_nodes:{}",
                field("cluster_known_nodes")
            ));
        }
        let reply = node
            .command(&["CLUSTER", "SLOTS"])
            .map_err(|e| format!("CLUSTER SLOTS on {p}: {e}"))?;
        let map = parse_slots(&reply).map_err(|e| format!("node {p}: {e}"))?;
        check_cover(&map, ports).map_err(|e| format!("node {p}: {e}"))?;
        match &agreed {
            None => agreed = Some(map),
            Some(a) if *a == map => {}
            Some(a) => return Err(format!("node {p} disagrees: {map:?} vs {a:?}")),
        }
    }
    agreed.ok_or_else(|| "no nodes".to_string())
}

/// Polls until every replica reports `master_link_status:up` (its first sync done).
fn wait_replicas_linked(nodes: &[RedisServer], deadline: Instant) -> io::Result<()> {
    loop {
        let mut pending = None;
        for node in nodes {
            let info = node
                .command(&["INFO", "replication"])?
                .as_text()
                .unwrap_or_default();
            let replica = info.contains("role:slave") || info.contains("role:replica");
            if replica && !info.contains("master_link_status:up") {
                pending = Some(node.port());
                break;
            }
        }
        let Some(port) = pending else {
            return Ok(());
        };
        if Instant::now() >= deadline {
            return Err(io::Error::new(
                io::ErrorKind::TimedOut,
                format!(
                    "replica on port {port} not linked to its master within {CLUSTER_TIMEOUT:?}"
                ),
            ));
        }
        thread::sleep(Duration::from_millis(100));
    }
}

/// CLUSTER SLOTS reply -> sorted ranges with the master's port.
pub(crate) fn parse_slots(reply: &Value) -> Result<Vec<SlotRange>, String> {
    let entries = reply
        .as_array()
        .ok_or_else(|| format!("CLUSTER SLOTS: unexpected reply {reply:?}"))?;
    let mut out = Vec::with_capacity(entries.len());
    for e in entries {
        let parts = e.as_array().ok_or("CLUSTER SLOTS: entry is not an array")?;
        let num = |i: usize| -> Result<i64, String> {
            parts
                .get(i)
                .and_then(Value::as_int)
                .ok_or_else(|| format!("CLUSTER SLOTS: bad entry {e:?}"))
        };
        let master = parts
            .get(2)
            .and_then(Value::as_array)
            .ok_or_else(|| format!("CLUSTER SLOTS: no master in {e:?}"))?;
        let port = master
            .get(1)
            .and_then(Value::as_int)
            .ok_or_else(|| format!("CLUSTER SLOTS: no port in {e:?}"))?;
        let conv = |v: i64| u16::try_from(v).map_err(|_| format!("out of range: {v}"));
        out.push(SlotRange {
            start: conv(num(0)?)?,
            end: conv(num(1)?)?,
            port: conv(port)?,
        });
    }
    out.sort();
    Ok(out)
}

fn check_cover(map: &[SlotRange], ports: &BTreeSet<u16>) -> Result<(), String> {
    let mut next: u32 = 0;
    for r in map {
        if u32::from(r.start) != next || r.end < r.start {
            return Err(format!("slot map has a gap or overlap at {next}: {map:?}"));
        }
        if !ports.contains(&r.port) {
            return Err(format!("slot range {r:?} owned by an unknown port"));
        }
        next = u32::from(r.end) + 1;
    }
    if next != u32::from(SLOTS) {
        return Err(format!("slot map covers only up to {next}"));
    }
    Ok(())
}

/// The hash slot of `key` (CRC16/XMODEM mod 16384, honouring the first
/// non-empty `{...}` hash tag), as CLUSTER KEYSLOT computes it.
pub fn key_slot(key: &[u8]) -> u16 {
    let hashed = match key.iter().position(|&b| b == b'{') {
        Some(open) => match key[open + 1..].iter().position(|&b| b == b'}') {
            Some(len) if len > 0 => &key[open + 1..open + 1 + len],
            _ => key,
        },
        None => key,
    };
    crc16(hashed) % SLOTS
}

fn crc16(data: &[u8]) -> u16 {
    let mut crc: u16 = 0;
    for &b in data {
        crc ^= u16::from(b) << 8;
        for _ in 0..8 {
            crc = if crc & 0x8000 != 0 {
                (crc << 1) ^ 0x1021
            } else {
                crc << 1
            };
        }
    }
    crc
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_slot_matches_redis_reference_values() {
        // Values from the Redis Cluster spec / CLUSTER KEYSLOT.
        assert_eq!(crc16(b"123456789"), 0x31C3);
        assert_eq!(key_slot(b"foo"), 12182);
        assert_eq!(key_slot(b"{user1000}.following"), key_slot(b"user1000"));
        assert_eq!(key_slot(b"foo{}{bar}"), key_slot(b"foo{}{bar}"));
        assert_ne!(key_slot(b"foo{}{bar}"), key_slot(b"bar"));
    }

    #[test]
    fn cover_check_finds_gaps() {
        let ports: BTreeSet<u16> = [1, 2].into_iter().collect();
        let ok = [
            SlotRange {
                start: 0,
                end: 99,
                port: 1,
            },
            SlotRange {
                start: 100,
                end: 16383,
                port: 2,
            },
        ];
        assert!(check_cover(&ok, &ports).is_ok());
        let gap = [
            SlotRange {
                start: 0,
                end: 98,
                port: 1,
            },
            SlotRange {
                start: 100,
                end: 16383,
                port: 2,
            },
        ];
        assert!(check_cover(&gap, &ports).is_err());
    }
}
