"""CPU cost of reading a Helm repository's ``index.yaml``: the whole document parsed at once
(what reading every chart costs) against splitting it into its charts and parsing the one chart
in use (what a cycle that updates one chart of the repository pays after a change of the index).
No network: the index is generated like ``helm repo index`` writes it. Prints a markdown table
(CPU time, min and median of ``--rounds``; the ratio from the same round).

Run: ``.venv/bin/python benchmarks/helm_index.py [--charts N] [--versions N] [--rounds N]``
"""

from __future__ import annotations

import argparse
import statistics
import time
from datetime import UTC, datetime, timedelta

from argocd_image_updater.registry.helmindex import IndexCharts, chart_blocks, parse_index
from argocd_image_updater_testing.helm_repo import render_index
from common import machine

URL = "https://charts.example.com"


def whole(text: str) -> int:
    """Every chart read (each block parsed): the cost of a full parse."""
    blocks = chart_blocks(text)
    assert blocks is not None
    charts = IndexCharts(text, blocks, URL)
    return sum(len(charts[name]) for name in charts)


def one(body: bytes, chart: str) -> int:
    return len(parse_index(body, URL)[chart])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--charts", type=int, default=100)
    parser.add_argument("--versions", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    start = datetime(2026, 1, 1, tzinfo=UTC)
    charts = {
        f"chart{i}": {
            f"{j // 10}.{j % 10}.0": start + timedelta(hours=j) for j in range(args.versions)
        }
        for i in range(args.charts)
    }
    body = render_index(charts, URL)
    text = body.decode()
    wanted = f"chart{args.charts // 2}"
    rows: dict[str, list[float]] = {"every chart parsed": [], "split + one chart parsed": []}
    for _ in range(args.rounds):
        began = time.process_time()
        assert whole(text) == args.charts * args.versions
        rows["every chart parsed"].append(time.process_time() - began)
        began = time.process_time()
        assert one(body, wanted) == args.versions
        rows["split + one chart parsed"].append(time.process_time() - began)
    print(machine())
    print(f"\nindex: {args.charts} charts × {args.versions} versions, {len(body) / 1e6:.1f} MB\n")
    print("| case | CPU min | CPU median | ratio to every chart (min) |")
    print("|---|---:|---:|---:|")
    base = min(rows["every chart parsed"])
    for name, times in rows.items():
        print(
            f"| {name} | {min(times) * 1000:.1f} ms | {statistics.median(times) * 1000:.1f} ms "
            f"| {min(times) / base:.3f}× |"
        )


if __name__ == "__main__":
    main()
