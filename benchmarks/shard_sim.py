"""A simulation of ``run --sharding`` without processes: the assignment of shard keys to members
(``controller/shards.py``, rendezvous hashing) and the remembered record split by key
(``model/state_parts.py``, as ``controller/shard_state.py`` stores it, one ConfigMap per key and
one per repository).

100,000 Applications over 10 members, two ways of keying them:

* ``legacy``: every Application is its own key (v0.x annotations): 100,000 keys;
* ``crd``: 10,000 ImageUpdaters of 10 Applications each (the environments of one service).

For each: the fraction of keys (and of Applications) that move when an 11th member joins and
when the 10th leaves, against the ideal 1/11 and 1/10; and, with one remembered write per
Application and first-seen times per repository (each service's repository with ``--tags``
tags, digests of ``--digests`` of them, and one base image every Application runs with
``--shared-tags`` tags), the stored size of each key's object and of each repository's (the
ConfigMap data as ``ControllerState.to_stored`` writes it: plain JSON, or gzip beyond 900 KB),
max and median, and of all objects, against the single record of an unsharded fleet. Also the CPU time of the state layer for one
member's share (a tenth of the keys): merging its objects into the record a cycle uses, and
splitting a cycle's record (every write changed) into its keys' objects.

Run: ``.venv/bin/python benchmarks/shard_sim.py [--apps N] [--members N] [--per-updater N]
[--tags N] [--digests N] [--shared-tags N] [--sample N]``.
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta

from argocd_image_updater.controller.shards import owner
from argocd_image_updater.model.controller_state import MAX_BYTES, ControllerState, repo_key
from argocd_image_updater.model.state_parts import (
    Layout,
    Placement,
    by_repository,
    merge,
    repository_target,
)
from common import machine

NOW = datetime(2026, 12, 4, 12, 0, tzinfo=UTC)
HOST = "registry.example.com"
BASE = repo_key("docker.io", "library/base-runtime")


def moved(keys: Sequence[str], before: Sequence[str], after: Sequence[str]) -> set[str]:
    return {key for key in keys if owner(key, before) != owner(key, after)}


def fleet(apps: int, per_key: int) -> tuple[dict[str, str], dict[str, str]]:
    """Application → key and Application → its service's repository (``per_key`` 1: legacy)."""
    app_key, app_repo = {}, {}
    for n in range(apps):
        service = n // 10  # ten environments per service, one repository
        group = n // per_key
        team = (group if per_key > 1 else service) % 100
        app = f"team-{team}/svc-{service}-env-{n % 10}"
        app_key[app] = app if per_key == 1 else f"team-{team}/updater-{group}"
        app_repo[app] = repo_key(HOST, f"team-{service % 100}/svc-{service}")
    return app_key, app_repo


def record(app_repo: dict[str, str], tags: int, digests: int, shared: int) -> ControllerState:
    state = ControllerState()
    for n, app in enumerate(app_repo):
        via = "git" if n % 2 else "argocd"
        state.record_write(app, "main", f"1.{n % 40}.{n % 7}", NOW - timedelta(minutes=n), via)
    for repo in set(app_repo.values()):
        for t in range(tags):
            state.record_first_seen(repo, [f"1.{t}.0"], NOW - timedelta(hours=tags - t))
        for t in range(tags - digests, tags):
            state.record_digest(repo, f"1.{t}.0", "sha256:" + f"{hash((repo, t)) & 0xFFFF:064x}")
    for t in range(shared):
        state.record_first_seen(BASE, [f"2026.{t}"], NOW - timedelta(days=shared - t))
    return state


def cpu(work: Callable[[], object]) -> tuple[float, object]:
    started = time.process_time()
    result = work()
    return time.process_time() - started, result


def simulate(args: argparse.Namespace, name: str, per_key: int) -> list[str]:
    members = [f"member-{i}" for i in range(args.members)]
    app_key, app_repo = fleet(args.apps, per_key)
    keys = sorted(set(app_key.values()))
    apps_of: dict[str, list[str]] = {}
    for app, key in app_key.items():
        apps_of.setdefault(key, []).append(app)
    join = moved(keys, members, [*members, f"member-{args.members}"])
    leave = moved(keys, members, members[:-1])
    join_apps = sum(len(apps_of[k]) for k in join) / args.apps
    leave_apps = sum(len(apps_of[k]) for k in leave) / args.apps

    state = record(app_repo, args.tags, args.digests, args.shared_tags)
    repos = {key: {BASE} for key in keys}
    for app, key in app_key.items():
        repos[key].add(app_repo[app])
    layout = Layout(app_key, {key: frozenset(r) for key, r in repos.items()})
    placement = Placement(layout, {})
    routed, homeless = placement.route(state.operations)
    all_repos = sorted(frozenset().union(*layout.repos.values()))
    by_repo, repo_homeless = by_repository(state.operations, all_repos)
    assert homeless == 0 and repo_homeless == 0
    rng = random.Random(7)
    sample = keys if args.sample <= 0 or args.sample >= len(keys) else rng.sample(keys, args.sample)
    sizes, dropped = [], 0
    empty = ControllerState()
    for key in sample:
        stored = placement.target(key, empty, routed.get(key, []), state).to_stored()
        sizes.append(stored.size)
        dropped += sum(stored.dropped.values())
    repo_sizes = []
    for repo in all_repos:
        part = repository_target(repo, empty, by_repo.get(repo, []), state)
        if not any(part.contents()):
            continue  # nothing remembered of it: no object is written
        stored = part.to_stored()
        repo_sizes.append(stored.size)
        dropped += sum(stored.dropped.values())
    single = state.to_stored()
    key_total = int(sum(sizes) * len(keys) / len(sample))
    total = key_total + sum(repo_sizes)

    # One member's share: merge its keys' and their repositories' objects (a load), split a
    # record whose every write changed (a save).
    share = [key for key in keys if owner(key, members) == members[0]]
    mine = {app for key in share for app in apps_of[key]}
    my_repos = sorted(frozenset().union(*(layout.repos[key] for key in share)))
    parts = []
    for key in share:
        part = placement.target(key, empty, routed.get(key, []), state)
        part.saved("1")
        parts.append(part)
    repo_parts = []
    for repo in my_repos:
        part = repository_target(repo, empty, by_repo.get(repo, []), state)
        part.saved("1")
        repo_parts.append(part)
    merge_s, merged = cpu(lambda: merge([*parts, *repo_parts], "t"))
    assert isinstance(merged, ControllerState)
    for app in mine:
        merged.record_write(app, "main", "9.9.9", NOW)
    shared = Layout({app: app_key[app] for app in mine}, {k: layout.repos[k] for k in share})
    stored_parts = dict(zip(share, parts, strict=True))

    def split() -> int:
        where = Placement(shared, stored_parts)
        by_key, _ = where.route(merged.operations)
        by_repository(merged.operations, my_repos)
        return sum(
            1 for key in share if where.target(key, stored_parts[key], by_key.get(key, []), merged)
        )

    split_s, _ = cpu(split)
    return [
        f"| {name} | {len(keys):,} | {len(join) / len(keys):.4f} ({join_apps:.4f}) | "
        f"{1 / (args.members + 1):.4f} | {len(leave) / len(keys):.4f} ({leave_apps:.4f}) | "
        f"{1 / args.members:.4f} | {max(sizes):,} | {int(statistics.median(sizes)):,} | "
        f"{len(sample):,} | {len(repo_sizes):,} | {max(repo_sizes, default=0):,} | "
        f"{int(statistics.median(repo_sizes or [0])):,} | {total:,} | {dropped} | "
        f"{single.size:,} ({sum(single.dropped.values()):,} left out) "
        f"| {len(share):,} | {len(my_repos):,} | {merge_s * 1000:.0f} | {split_s * 1000:.0f} |"
    ]


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--apps", type=int, default=100_000)
    parser.add_argument("--members", type=int, default=10)
    parser.add_argument("--per-updater", type=int, default=10)
    parser.add_argument("--tags", type=int, default=50, help="first-seen tags per repository")
    parser.add_argument("--digests", type=int, default=10, help="digests per repository")
    parser.add_argument("--shared-tags", type=int, default=100, help="tags of the shared base")
    parser.add_argument("--sample", type=int, default=0, help="objects sized (0: every one)")
    args = parser.parse_args(argv)
    print(machine())
    print(
        f"{args.apps:,} Applications over {args.members} members; one write per Application; "
        f"{args.tags} first-seen tags ({args.digests} with digests) per service repository, "
        f"{args.shared_tags} of a base image every Application runs; object limit "
        f"{MAX_BYTES:,} bytes\n"
    )
    print(
        "| keys | count | moved on join (apps) | ideal | moved on leave (apps) | ideal | "
        "key object max bytes | median | key objects sized | repositories | "
        "repository object max bytes | median | all objects bytes | entries left out | "
        "single record bytes | one member's keys | their repositories | merge ms | split ms |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for row in simulate(args, "legacy (Applications)", 1):
        print(row)
    for row in simulate(args, f"crd (ImageUpdaters of {args.per_updater})", args.per_updater):
        print(row)


if __name__ == "__main__":
    main()
