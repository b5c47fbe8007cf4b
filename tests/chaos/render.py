#!/usr/bin/env python3
"""Renders the chaos suite's JSON-lines report (EMQ_CHAOS_REPORT) as a Markdown table.

  render.py REPORT            prints the table
  render.py REPORT --into MD  replaces the table between the chaos-table markers in MD
  render.py REPORT --summary  one line per scenario (what CI prints)
"""
import json
import sys

BEGIN, END = "<!-- chaos-table:begin -->", "<!-- chaos-table:end -->"


def rows(path):
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def cell(v):
    return "–" if v is None else str(v)


def table(rs):
    out = [
        "| scenario | profile | topology | faults | jobs | lost | run twice | recovery max (ms) | bound (ms) |",
        "|---|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rs:
        out.append("| " + " | ".join(cell(r.get(k)) for k in (
            "scenario", "profile", "topology", "faults", "jobs", "lost", "run_twice",
            "recovery_ms_max", "recovery_bound_ms")) + " |")
    return "\n".join(out)


def main():
    rs = rows(sys.argv[1])
    if "--summary" in sys.argv:
        for r in rs:
            print(f"chaos: {r['scenario']} [{r.get('topology')}]: {r.get('faults')} faults, "
                  f"{r.get('jobs')} jobs, {r.get('lost')} lost, {r.get('run_twice')} run twice, "
                  f"recovery {r.get('recovery_ms_max')} ms")
    elif "--into" in sys.argv:
        md = sys.argv[sys.argv.index("--into") + 1]
        text = open(md).read()
        a, b = text.index(BEGIN), text.index(END)
        text = text[: a + len(BEGIN)] + "\n" + table(rs) + "\n" + text[b:]
        open(md, "w").write(text)
    else:
        print(table(rs))


if __name__ == "__main__":
    main()
