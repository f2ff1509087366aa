"""The built-in demo a new user runs first must work end to end."""

from __future__ import annotations

import subprocess
import sys


def test_demo_runs_the_tag_choice_and_a_full_cycle() -> None:
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
    assert "applications=2 images_updated=2 errors=0 registry scans=1" in out
    assert "newTag: 1.0.1" in out
