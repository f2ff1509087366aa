"""Time the tag choice over 10,000 tags (CPU time, best of 5) and print a markdown table.

Two columns: **cold**, every parse cache of the policy emptied before each timed choice (what
``test`` and a controller's first cycle pay: each tag's version and the constraint are parsed),
and **warm**, the same choice again with the caches filled (what later Applications sharing
the tag list pay; within a cycle the controller makes each choice only once).

Run: ``.venv/bin/python benchmarks/policy_speed.py``
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable

from argocd_image_updater.model.tags import TagInfo
from argocd_image_updater.policy import filters, semver
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


def clear_parse_caches() -> None:
    """Empty the caches of parsed versions, constraints and tag filters."""
    for module in (semver, filters):
        for value in vars(module).values():
            clear = getattr(value, "cache_clear", None)
            if callable(clear):
                clear()


def best_cpu_seconds(run: Callable[[], Selection], *, cold: bool) -> tuple[float, Selection]:
    best, result = float("inf"), run()
    for _ in range(ROUNDS):
        if cold:
            clear_parse_caches()
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
    one_tag = generate_tags(1)
    print(
        f"| case | tags | cold: best CPU time of {ROUNDS} | cold, per tag | cold, 1 tag | "
        "warm (caches filled) | chosen |"
    )
    print("|---|---:|---:|---:|---:|---:|---|")
    for label, policy in cases:
        cold, selection = best_cpu_seconds(lambda p=policy: choose(p, tags), cold=True)
        single, _ = best_cpu_seconds(lambda p=policy: choose(p, one_tag), cold=True)
        warm, _ = best_cpu_seconds(lambda p=policy: choose(p, tags), cold=False)
        chosen = selection.chosen.name if selection.chosen else "-"
        per_tag_us = cold / len(tags) * 1e6
        print(
            f"| {label} | {len(tags)} | {cold * 1e3:.1f} ms | {per_tag_us:.2f} µs | "
            f"{single * 1e3:.2f} ms | {warm * 1e3:.1f} ms | {chosen} |"
        )


if __name__ == "__main__":
    main()
