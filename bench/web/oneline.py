"""One progress line for bench/web.sh from a generator JSON line on stdin: `oneline.py sat|load`."""
import json
import sys

d = json.load(sys.stdin)
lat = d["lat_us"]
if sys.argv[1] == "sat":
    print(f"{d['throughput']:.0f} req/s closed loop, p50 {lat['p50'] / 1000:.2f} ms, p99 {lat['p99'] / 1000:.2f} ms, "
          f"generator {100 * d['gen_cpu_s'] / d['span_s']:.0f}% of a core")
else:
    n = max(d["sent"], 1)
    c = d["cpu"]
    print(f"p50 {lat['p50'] / 1000:.2f} p99 {lat['p99'] / 1000:.2f} p99.9 {lat['p999'] / 1000:.2f} ms; "
          f"service {c['service']['sched_s'] * 1e6 / n:.0f} us/req, redis {c['redis']['sched_s'] * 1e6 / n:.1f} us/req; "
          f"errors {d['errors']}, queued {d['queued']}, max in flight {d['max_inflight']}, "
          f"send lag p99 {d['send_lag_us']['p99'] / 1000:.2f} ms, generator {100 * d['gen_cpu_s'] / d['span_s']:.0f}% of a core")
