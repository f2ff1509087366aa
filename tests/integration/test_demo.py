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
    # The local-mode cycle: the plan with the reason for what was skipped, and both commits.
    assert "applications=2 images_updated=2 errors=0 registry scans=1" in out
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
