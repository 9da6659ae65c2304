"""Turns the benchmark rows (one JSON object per line) into a table with ratios, JSON and CSV."""
import csv
import json
import sys
from pathlib import Path


def main():
    rows = [json.loads(line) for line in Path(sys.argv[1]).read_text().splitlines() if line.strip()]
    out = Path(sys.argv[2])
    (out / "results.json").write_text(json.dumps(rows, indent=2))
    keys = sorted({k for row in rows for k in row})
    with open(out / "results.csv", "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=keys)
        writer.writeheader()
        writer.writerows(rows)

    def find(bench, impl_prefix, **match):
        for row in rows:
            if row["bench"] == bench and row["impl"].startswith(impl_prefix) and all(row.get(k) == v for k, v in match.items()):
                return row
        return None

    print(f"{'benchmark':<34}{'fibermpi':>12}{'python mp':>12}{'raw MPI':>12}{'fiber/python':>14}{'fiber/raw':>11}")
    def line(label, bench, field, **match):
        fiber, python, raw = find(bench, "fibermpi", **match), find(bench, "python", **match), find(bench, "raw", **match)
        f = fiber.get(field) if fiber else None
        p = python.get(field) if python else None
        r = raw.get(field) if raw else None
        fmt = lambda v: f"{v:>12.4g}" if v is not None else f"{'-':>12}"
        ratio = lambda a, b: f"{a / b:>.2f}x" if a is not None and b else "-"
        print(f"{label:<34}{fmt(f)}{fmt(p)}{fmt(r)}{ratio(f, p):>14}{ratio(f, r):>11}")

    line("start 1 process (s)", "start_processes", "median_s", processes=1)
    line("start 8 processes (s)", "start_processes", "median_s", processes=8)
    line("queue round trip p50 (us)", "queue_round_trip", "p50_us")
    line("queue round trip p99 (us)", "queue_round_trip", "p99_us")
    line("blocked child CPU (%)", "idle_cpu", "blocked_child_pct")
    line("blocked master CPU (%)", "idle_cpu", "blocked_master_pct")


if __name__ == "__main__":
    main()
