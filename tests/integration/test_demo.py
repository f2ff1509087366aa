"""The built-in demo a new user runs first must work end to end."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path


def test_demo_runs_the_tag_choice_and_a_full_cycle_in_local_mode() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "argocd_image_updater", "demo"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    out = result.stdout
    assert "/demo/web:2.0.0" in out  # semver without constraint
    assert "/demo/web:1.0.1" in out  # ~1.0
    assert "latest@sha256:" in out  # digest strategy
    # alphabetical teaches date-stamped names: the last name is the newest date, never `nightly`
    assert "/demo/web:release-20260216" in out and "/demo/web:nightly" not in out
    # --explain: chosen first, then the tags it beat in the strategy's order, counts at the end
    semver = out.split("=== semver, no constraint")[1].split("===")[0]
    rows = [line.split()[0] for line in semver.splitlines()[4:8]]
    assert rows == ["2.0.0", "1.1.0", "1.0.1", "1.0.0"]
    assert "12 tags: 1 chosen, 3 older, 2 ignored, 5 not-semver, 1 prerelease" in semver
    # The local-mode cycle: the plan with the reason for what was skipped, and both commits.
    assert "applications=2 images_updated=2 errors=0 registry scans=2" in out
    worker = next(line for line in out.splitlines() if "argocd/shop-prod     worker" in line)
    assert "/demo/worker:2.1.0 -> -" in worker  # its own image, not demo/web
    assert "skipped (no-candidate): No suitable image tag for upgrade found" in out
    assert "build: automatic update of shop-staging" in out
    assert "+      - 127.0.0.1:" in out and "/demo/web:1.0.1  # set by argocd-image-updater" in out
    assert "build: automatic update of shop-prod" in out
    assert "+  newTag: 1.0.1  # set by argocd-image-updater" in out


def test_demo_is_safe_to_run_twice_and_leaves_nothing_behind(tmp_path: Path) -> None:
    env = {**os.environ, "TMPDIR": str(tmp_path)}
    for _ in range(2):
        result = subprocess.run(
            [sys.executable, "-m", "argocd_image_updater", "demo"],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
            env=env,
        )
        assert result.returncode == 0, result.stdout + result.stderr
    assert list(tmp_path.iterdir()) == []
