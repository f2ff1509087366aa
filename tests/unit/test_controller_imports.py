"""What the controller's start-up loads: ``cryptography`` (about 11 MB) only when a signature is
verified or a GitHub App token is signed, never to start ``run``."""

from __future__ import annotations

import subprocess
import sys

PROBE = """
import sys
import argocd_image_updater.cli.main
import argocd_image_updater.cli.run_cmd
import argocd_image_updater.cli.run_cluster
import argocd_image_updater.cli.run_local
import argocd_image_updater.verify.explain
print(",".join(sorted(m for m in ("cryptography", "rich", "pygments") if m in sys.modules)))
"""


def test_the_controller_starts_without_cryptography() -> None:
    result = subprocess.run(
        [sys.executable, "-c", PROBE], capture_output=True, text=True, check=True, timeout=120
    )
    assert result.stdout.strip() == ""


def test_cryptography_is_loaded_when_a_key_is_read() -> None:
    probe = (
        "import sys\n"
        "from argocd_image_updater.verify.keys import UnusableKey, load_public_key\n"
        "assert 'cryptography' not in sys.modules\n"
        "try:\n"
        "    load_public_key(b'-----BEGIN PUBLIC KEY-----\\nAAAA\\n-----END PUBLIC KEY-----')\n"
        "except UnusableKey as err:\n"
        "    print('unusable:', err)\n"
        "print('cryptography' in sys.modules)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=120
    )
    assert result.stdout.splitlines()[0].startswith("unusable: not a readable PEM public key")
    assert result.stdout.splitlines()[-1] == "True"
