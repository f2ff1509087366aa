"""``test --explain``: chosen first, grouped by verdict, in the strategy's order, with counts."""

from __future__ import annotations

from datetime import UTC, datetime

from argocd_image_updater.cli.explain import explain_lines, ordered_verdicts
from argocd_image_updater.model.platform import Platform
from argocd_image_updater.model.tags import PlatformImage, TagInfo
from argocd_image_updater.policy.filters import parse_allow_tags
from argocd_image_updater.policy.select import Policy, choose
from argocd_image_updater.policy.strategies import named

AMD64 = Platform("linux", "amd64")


def tag(name: str, day: int = 1) -> TagInfo:
    created = datetime(2026, 1, day, tzinfo=UTC)
    return TagInfo(name, images=(PlatformImage(AMD64, created=created),))


def table(policy: Policy, tags: list[TagInfo]) -> list[str]:
    selection = choose(policy, tags)
    return explain_lines(ordered_verdicts(selection, policy.strategy, tags, policy.platforms))


def test_semver_versions_highest_first_then_each_rejection_group() -> None:
    tags = [tag(n) for n in ("1.0.0", "latest", "1.10.0", "1.2.0", "2.0.0", "1.9.0", "x")]
    lines = table(Policy(named("semver"), constraint="^1.0"), tags)
    assert [line.split()[:2] for line in lines[1:-1]] == [
        ["1.10.0", "chosen"],
        ["1.9.0", "older"],
        ["1.2.0", "older"],
        ["1.0.0", "older"],
        ["x", "not-semver"],
        ["latest", "not-semver"],
        ["2.0.0", "outside-constraint"],
    ]
    assert lines[-1] == "7 tags: 1 chosen, 3 older, 2 not-semver, 1 outside-constraint"


def test_newest_build_by_date_and_alphabetical_by_name() -> None:
    tags = [tag("b", 3), tag("a", 9), tag("c", 1), tag("main-1", 5)]
    allow = parse_allow_tags("regexp:^[a-c]$")
    lines = table(Policy(named("newest-build"), allow=allow), tags)
    assert [line.split()[0] for line in lines[1:-1]] == ["a", "b", "c", "main-1"]
    lines = table(Policy(named("alphabetical"), allow=allow), tags)
    assert [line.split()[0] for line in lines[1:-1]] == ["c", "b", "a", "main-1"]
    assert lines[-1] == "4 tags: 1 chosen, 2 older, 1 not-allowed"
