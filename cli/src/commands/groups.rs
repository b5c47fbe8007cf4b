//! `emq groups <queue>`: a queue's fair groups (the core's `emq::groups`: tenants sharing one
//! queue, served in turn by weight), listed as a table or `--json`, and their settings:
//! `pause <group>`, `resume <group>`, `weight <group> <n>`, `concurrency [<group>] <n|none>`,
//! `max-waiting [<group>] <n|none>` (no group: the default of every group).
//!
//! The core lists groups by name, a page at a time ([`Queue::groups`]); sorted by backlog or by
//! running jobs, every group is read first (pages of [`CORE_PAGE`], at most [`MAX_SORTED`] groups)
//! and then sorted and paged here. The dashboard's Groups page reads them through [`read`] too.
//!
//! Every value is checked by the core (`invalid_option`, exit 2): a number is read here from its
//! text only, and one too large for the core's type is passed on as its type's largest, which the
//! core refuses with its own bounds in the message.

use crate::connect::open_queue;
use clap::{Args as ClapArgs, Subcommand, ValueEnum};
use emq::{Error, ErrorCode, GroupInfo, Queue, QueueName};
use serde::Serialize;

/// Groups shown by default.
pub const DEFAULT_LIMIT: u64 = 50;
/// Groups one call of the core returns at most.
pub const CORE_PAGE: u64 = 10_000;
/// Most groups read to sort them by backlog or running jobs (by name, the core pages).
pub const MAX_SORTED: u64 = 100_000;

/// `emq groups` options.
#[derive(ClapArgs, Debug)]
#[command(after_help = "\
Examples:
  emq groups emails                          # the groups with the largest backlog first
  emq groups emails --sort name --offset 50  # by name, the second page of 50
  emq groups emails --json                   # a JSON array, for scripts
  emq groups emails pause tenant-42          # hand out none of tenant-42's jobs
  emq groups emails resume tenant-42
  emq groups emails weight tenant-42 3       # 3 of its jobs for each job of a weight-1 group
  emq groups emails concurrency tenant-42 5  # at most 5 of its jobs running at once
  emq groups emails concurrency 2            # the default for every group without its own
  emq groups emails concurrency tenant-42 none   # lift tenant-42's own cap
  emq groups emails max-waiting 10000        # refuse adds (group_full) past 10,000 waiting

A job joins a group with `emq add <queue> <name> --group <group>`. A queue named like an
action (pause, weight, ...) is listed with `emq groups -- <queue>`.")]
pub struct Args {
    /// The queue name.
    pub queue: String,

    /// What to change; without one, the groups are listed.
    #[command(subcommand)]
    pub action: Option<Action>,

    /// The order of the list: waiting (the backlog, largest first), running (largest first) or
    /// name. Ties are in name order.
    #[arg(long, value_enum, default_value_t = Sort::Waiting)]
    pub sort: Sort,

    /// Skip this many groups of the sorted list.
    #[arg(long, default_value_t = 0)]
    pub offset: u64,

    /// Most groups to show.
    #[arg(long, default_value_t = DEFAULT_LIMIT)]
    pub limit: u64,

    /// Print a JSON array: `[{"name", "waiting", "running", "weight", "concurrency",
    /// "max_waiting", "paused"}]` (`concurrency` and `max_waiting`: the group's own cap, else the
    /// queue's default, else null).
    #[arg(long)]
    pub json: bool,
}

/// The order of a list of groups.
#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Sort {
    /// Most waiting jobs first.
    Waiting,
    /// Most running jobs first.
    Running,
    /// By name.
    Name,
}

impl Sort {
    /// Its word on the command line and in the API.
    pub fn as_str(self) -> &'static str {
        match self {
            Sort::Waiting => "waiting",
            Sort::Running => "running",
            Sort::Name => "name",
        }
    }
}

/// A change to one group, or to the default of every group.
#[derive(Subcommand, Debug)]
pub enum Action {
    /// Stop handing out a group's jobs (they keep waiting; adds still land).
    Pause {
        /// The group.
        group: String,
    },
    /// Hand out a paused group's jobs again.
    Resume {
        /// The group.
        group: String,
    },
    /// Set a group's weight, 1 to 1000 (every group's is 1 unless set): while groups have work,
    /// a group of weight 3 runs three jobs for each job of a group of weight 1.
    Weight {
        /// The group.
        group: String,
        /// The weight, 1 to 1000.
        #[arg(allow_hyphen_values = true)]
        weight: String,
    },
    /// Set the most jobs of a group running at once across all workers, or with no group the
    /// default of every group without its own; `none` lifts it.
    #[command(allow_missing_positional = true, allow_negative_numbers = true)]
    Concurrency {
        /// The group [default: every group's default].
        group: Option<String>,
        /// The cap, 1 to 1000000, or `none`.
        #[arg(value_name = "N|none", allow_hyphen_values = true)]
        limit: String,
    },
    /// Set the most jobs of a group waiting (an add past it fails with group_full), or with no
    /// group the default of every group without its own; `none` lifts it.
    #[command(allow_missing_positional = true, allow_negative_numbers = true)]
    MaxWaiting {
        /// The group [default: every group's default].
        group: Option<String>,
        /// The cap, 1 to 1000000000000, or `none`.
        #[arg(value_name = "N|none", allow_hyphen_values = true)]
        limit: String,
    },
}

/// One page of a queue's groups, sorted.
#[derive(Serialize, Debug)]
pub struct Page {
    /// The groups shown.
    pub groups: Vec<GroupInfo>,
    /// The order.
    pub sort: Sort,
    /// Groups skipped.
    pub offset: u64,
    /// Most groups asked for.
    pub limit: u64,
    /// Groups in the sorted list (for sort by name: None, the core pages by name and counts none).
    pub total: Option<u64>,
    /// True when sorting stopped at [`MAX_SORTED`] groups (the others were not read).
    pub truncated: bool,
}

/// Reads one page of `q`'s groups in `sort` order.
pub async fn read(q: &Queue, sort: Sort, offset: u64, limit: u64) -> emq::Result<Page> {
    if sort == Sort::Name {
        // The core's pages, as many as `limit` takes.
        let mut groups: Vec<GroupInfo> = Vec::new();
        while (groups.len() as u64) < limit {
            let want = (limit - groups.len() as u64).min(CORE_PAGE);
            let page = q.groups(offset + groups.len() as u64, want).await?;
            let got = page.len() as u64;
            groups.extend(page);
            if got < want {
                break;
            }
        }
        return Ok(Page {
            groups,
            sort,
            offset,
            limit,
            total: None,
            truncated: false,
        });
    }
    let mut all: Vec<GroupInfo> = Vec::new();
    let mut truncated = false;
    loop {
        let page = q.groups(all.len() as u64, CORE_PAGE).await?;
        let full = page.len() as u64 == CORE_PAGE;
        all.extend(page);
        if !full {
            break;
        }
        if all.len() as u64 >= MAX_SORTED {
            truncated = true;
            break;
        }
    }
    // Stable: ties keep the core's name order.
    match sort {
        Sort::Waiting => all.sort_by_key(|g| std::cmp::Reverse(g.waiting)),
        Sort::Running => all.sort_by_key(|g| std::cmp::Reverse(g.running)),
        Sort::Name => {}
    }
    let total = all.len() as u64;
    let groups = all
        .into_iter()
        .skip(usize::try_from(offset).unwrap_or(usize::MAX))
        .take(usize::try_from(limit).unwrap_or(usize::MAX))
        .collect();
    Ok(Page {
        groups,
        sort,
        offset,
        limit,
        total: Some(total),
        truncated,
    })
}

/// A cap's text: `none` (lift it) or a whole number.
pub fn parse_limit(what: &str, text: &str) -> emq::Result<Option<u64>> {
    let t = text.trim();
    if t.eq_ignore_ascii_case("none") {
        return Ok(None);
    }
    parse_number(what, t).map(Some)
}

fn parse_number(what: &str, text: &str) -> emq::Result<u64> {
    text.trim().parse::<u64>().map_err(|_| {
        Error::new(
            ErrorCode::InvalidOption,
            format!("{what} must be a whole number, not {text:?}"),
        )
    })
}

/// `n` as a u32; past u32's range, its largest (which the core refuses, naming its bounds).
pub fn saturate_u32(n: u64) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

/// Runs `emq groups`.
pub async fn run(urls: &[String], args: &Args) -> emq::Result<()> {
    // Checked before connecting: bad input is refused whether or not a server answers.
    QueueName::new(&args.queue)?;
    if let Some(action) = &args.action {
        return act(urls, &args.queue, action).await;
    }
    let opened = open_queue(urls, &args.queue).await?;
    let page = read(&opened.queue, args.sort, args.offset, args.limit).await?;
    if args.json {
        outln!("{}", super::to_json(&page.groups)?);
        return Ok(());
    }
    let width = page
        .groups
        .iter()
        .map(|g| g.name.chars().count())
        .max()
        .unwrap_or(0)
        .clamp(5, 40);
    outln!(
        "{:<width$} {:>9} {:>8} {:>7} {:>12} {:>12} {:>7}",
        "GROUP",
        "WAITING",
        "RUNNING",
        "WEIGHT",
        "CONCURRENCY",
        "MAX WAITING",
        "PAUSED"
    );
    let cap = |c: Option<u64>| c.map(|n| n.to_string()).unwrap_or_else(|| "-".into());
    for g in &page.groups {
        outln!(
            "{:<width$} {:>9} {:>8} {:>7} {:>12} {:>12} {:>7}",
            g.name,
            g.waiting,
            g.running,
            g.weight,
            cap(g.concurrency.map(u64::from)),
            cap(g.max_waiting),
            if g.paused { "yes" } else { "no" }
        );
    }
    let of = match page.total {
        Some(t) => format!(" of {t}"),
        None => String::new(),
    };
    eprintln!(
        "{} group(s) shown{of} in queue {} (by {}, offset {}, limit {}){}",
        page.groups.len(),
        args.queue,
        page.sort.as_str(),
        page.offset,
        page.limit,
        if page.truncated {
            format!("; only the first {MAX_SORTED} groups by name were read and sorted")
        } else {
            String::new()
        }
    );
    Ok(())
}

/// One change, said in one line.
async fn act(urls: &[String], queue: &str, action: &Action) -> emq::Result<()> {
    // The numbers' text is read before connecting; their bounds are the core's.
    let scope = |g: &Option<String>| match g {
        Some(g) => format!("group {g}"),
        None => "every group (the default)".to_string(),
    };
    match action {
        Action::Pause { group } => {
            let opened = open_queue(urls, queue).await?;
            opened.queue.pause_group(group).await?;
            outln!("paused group {group} in queue {queue}");
        }
        Action::Resume { group } => {
            let opened = open_queue(urls, queue).await?;
            opened.queue.resume_group(group).await?;
            outln!("resumed group {group} in queue {queue}");
        }
        Action::Weight { group, weight } => {
            let w = saturate_u32(parse_number("a group weight", weight)?);
            let opened = open_queue(urls, queue).await?;
            opened.queue.set_group_weight(group, w).await?;
            outln!("set the weight of group {group} in queue {queue} to {w}");
        }
        Action::Concurrency { group, limit } => {
            let n = parse_limit("a group concurrency", limit)?.map(saturate_u32);
            let opened = open_queue(urls, queue).await?;
            opened
                .queue
                .set_group_concurrency(n, group.as_deref())
                .await?;
            match n {
                Some(n) => outln!(
                    "set the concurrency of {} in queue {queue} to {n}",
                    scope(group)
                ),
                None => outln!(
                    "lifted the concurrency cap of {} in queue {queue}",
                    scope(group)
                ),
            }
        }
        Action::MaxWaiting { group, limit } => {
            let n = parse_limit("a group's most waiting jobs", limit)?;
            let opened = open_queue(urls, queue).await?;
            opened
                .queue
                .set_group_max_waiting(n, group.as_deref())
                .await?;
            match n {
                Some(n) => outln!(
                    "set the most waiting jobs of {} in queue {queue} to {n}",
                    scope(group)
                ),
                None => outln!(
                    "lifted the cap on waiting jobs of {} in queue {queue}",
                    scope(group)
                ),
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn caps_are_a_number_or_none() {
        assert_eq!(parse_limit("x", "none").unwrap(), None);
        assert_eq!(parse_limit("x", "NONE").unwrap(), None);
        assert_eq!(parse_limit("x", "5").unwrap(), Some(5));
        for bad in ["", "-1", "1.5", "five", "0x10"] {
            let e = parse_limit("x", bad).unwrap_err();
            assert_eq!(e.code(), ErrorCode::InvalidOption, "{bad:?}");
        }
        assert_eq!(saturate_u32(7), 7);
        assert_eq!(saturate_u32(u64::MAX), u32::MAX);
    }
}
