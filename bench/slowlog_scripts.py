#!/usr/bin/env python3
"""Where the server time of emq's scripts goes, per script: reads SLOWLOG GET of a redis-server
whose slowlog-log-slower-than was set to 0 (every command logged) and sums the EVALSHA entries by
script hash, keeping only calls on one queue (QUEUE: the `{name}` in its keys).

Usage: slowlog_scripts.py PORT QUEUE [LABEL]
Prints one JSON object: per script hash, calls, total µs, µs per call, the number of keys and the
last key's suffix (which names the script's fixed keys, e.g. complete.lua's record keys). Used by
bench/fairness_profile.sh; SLOWLOG timing is the server's own per-command clock (the same as
INFO commandstats' usec).
"""
import collections
import json
import subprocess
import sys


def main():
    port, queue = sys.argv[1], sys.argv[2]
    label = sys.argv[3] if len(sys.argv) > 3 else queue
    raw = subprocess.run(["redis-cli", "-h", "127.0.0.1", "-p", port, "--json", "SLOWLOG", "GET", "-1"],
                         check=True, capture_output=True, text=True).stdout
    entries = json.loads(raw)
    per = collections.OrderedDict()
    tag = "{" + queue + "}"
    other = collections.Counter()
    for e in entries:
        # [id, unix time, duration µs, [args...], client addr, client name]
        dur, args = e[2], e[3]
        if not args:
            continue
        cmd = str(args[0]).lower()
        if cmd != "evalsha":
            if any(tag in str(a) for a in args[1:3]):
                other[cmd] += dur
            continue
        keys = args[3:3 + int(args[2])] if len(args) > 3 else []
        if not any(tag in str(k) for k in keys):
            continue
        sha = str(args[1])[:10]
        p = per.setdefault(sha, {"calls": 0, "us": 0, "numkeys": int(args[2]), "keys": [str(k).split("}:")[-1] for k in keys[:30]]})
        p["calls"] += 1
        p["us"] += dur
    out = {"label": label, "scripts": {}, "other_commands_us": dict(other)}
    for sha, p in sorted(per.items(), key=lambda kv: -kv[1]["us"]):
        out["scripts"][sha] = {"calls": p["calls"], "us": p["us"], "us_per_call": round(p["us"] / p["calls"], 1),
                               "numkeys": p["numkeys"], "keys": p["keys"]}
    print(json.dumps(out))


if __name__ == "__main__":
    main()
