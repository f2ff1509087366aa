"""Time the tag choice over 10,000 tags (CPU time, best of 5) and print a markdown table.

Run: ``.venv/bin/python benchmarks/policy_speed.py``
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable

from argocd_image_updater.model.tags import TagInfo
from argocd_image_updater.policy.select import Policy, Selection, choose
from argocd_image_updater.policy.strategies import named

TAG_COUNT = 10_000
ROUNDS = 5


def generate_tags(count: int, seed: int = 42) -> list[TagInfo]:
    """Registry-like tags: releases, v-prefixed, pre-releases, build tags and commit hashes."""
    rng = random.Random(seed)
    names: set[str] = set()
    while len(names) < count:
        major, minor, patch = rng.randrange(10), rng.randrange(50), rng.randrange(100)
        kind = rng.random()
        if kind < 0.55:
            names.add(f"{major}.{minor}.{patch}")
        elif kind < 0.7:
            names.add(f"v{major}.{minor}.{patch}")
        elif kind < 0.85:
            names.add(f"{major}.{minor}.{patch}-rc.{rng.randrange(20)}")
        elif kind < 0.95:
            names.add(f"{rng.getrandbits(28):07x}")
        else:
            names.add(f"{major}.{minor}.{patch}-alpine")
    ordered = sorted(names)
    rng.shuffle(ordered)
    return [TagInfo(name) for name in ordered]


def best_cpu_seconds(run: Callable[[], Selection]) -> tuple[float, Selection]:
    best, result = float("inf"), run()
    for _ in range(ROUNDS):
        start = time.process_time()
        result = run()
        best = min(best, time.process_time() - start)
    return best, result


def main() -> None:
    tags = generate_tags(TAG_COUNT)
    cases = [
        ("semver `^3.0`", Policy(named("semver"), "^3.0")),
        ("semver `>=2.0 <5.0 \\|\\| ~7.1`", Policy(named("semver"), ">=2.0 <5.0 || ~7.1")),
        ("semver (no constraint)", Policy(named("semver"))),
        ("alphabetical", Policy(named("alphabetical"))),
    ]
    print(f"| case | tags | best CPU time of {ROUNDS} | per tag | chosen |")
    print("|---|---:|---:|---:|---|")
    for label, policy in cases:
        seconds, selection = best_cpu_seconds(lambda p=policy: choose(p, tags))
        chosen = selection.chosen.name if selection.chosen else "-"
        per_tag_us = seconds / len(tags) * 1e6
        print(
            f"| {label} | {len(tags)} | {seconds * 1e3:.1f} ms | {per_tag_us:.2f} µs | {chosen} |"
        )


if __name__ == "__main__":
    main()
