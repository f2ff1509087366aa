"""Auto-detection: a registry without configured credentials whose host names a cloud registry
uses that cloud's login, when its SDK is installed and the environment holds an identity.

The identity check only looks at environment variables, well-known files and the machine's DMI
data: it never calls a metadata server, so detection is cheap and never slows down or breaks
anonymous pulls. Whether the identity really works shows at the first login; an auto-detected
login that fails falls back to anonymous access.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from argocd_image_updater.config.cloud_options import CloudKind, CloudOptions
from argocd_image_updater.registry.cloud.hosts import CLOUD_NAMES, cloud_of_host

DMI_DIR: Final = Path("/sys/class/dmi/id")
AZURE_ASSET_TAG: Final = "7783-7084-3265-9085-8269-3286-77"

_AWS_ENV: Final = (
    "AWS_ACCESS_KEY_ID",
    "AWS_PROFILE",
    "AWS_WEB_IDENTITY_TOKEN_FILE",
    "AWS_CONTAINER_CREDENTIALS_FULL_URI",
    "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
)
_GCP_ENV: Final = ("GOOGLE_APPLICATION_CREDENTIALS", "GCE_METADATA_HOST", "GCE_METADATA_IP")
_AZURE_ENV: Final = (
    "AZURE_FEDERATED_TOKEN_FILE",
    "AZURE_CLIENT_SECRET",
    "AZURE_CLIENT_CERTIFICATE_PATH",
    "IDENTITY_ENDPOINT",
    "MSI_ENDPOINT",
    "AZURE_POD_IDENTITY_AUTHORITY_HOST",
)


@dataclass(frozen=True, slots=True)
class Detection:
    """The outcome for one host: ``reference`` is set when a login is used, ``reason`` says why
    (or why not)."""

    kind: CloudKind | None
    reference: str
    reason: str


def _dmi(dmi_dir: Path, name: str) -> str:
    try:
        return (dmi_dir / name).read_text(encoding="utf-8", errors="replace").strip()
    except OSError:
        return ""


def _home_file(env: Mapping[str, str], *parts: str) -> bool:
    home = env.get("HOME", "")
    return bool(home) and Path(home, *parts).is_file()


def identity_source(kind: CloudKind, env: Mapping[str, str], dmi_dir: Path = DMI_DIR) -> str:
    """Where an identity for ``kind`` seems to be, e.g. ``AWS_WEB_IDENTITY_TOKEN_FILE``; ``""``
    when there is none."""
    names: tuple[str, ...]
    match kind:
        case CloudKind.ECR:
            names, machine = _AWS_ENV, "EC2 instance"
            if _home_file(env, ".aws", "credentials") or _home_file(env, ".aws", "config"):
                return "~/.aws"
            on_machine = (
                _dmi(dmi_dir, "sys_vendor").startswith("Amazon")
                or _dmi(dmi_dir, "board_asset_tag").startswith("i-")
                or _dmi(dmi_dir, "product_uuid").lower().startswith("ec2")
            )
        case CloudKind.GCP:
            names, machine = _GCP_ENV, "Google Compute Engine machine (metadata server)"
            config_dir = env.get("CLOUDSDK_CONFIG", "")
            adc = "application_default_credentials.json"
            if (config_dir and Path(config_dir, adc).is_file()) or _home_file(
                env, ".config", "gcloud", adc
            ):
                return "gcloud application default credentials"
            on_machine = "Google" in _dmi(dmi_dir, "product_name")
        case CloudKind.AZURE:
            names, machine = _AZURE_ENV, "Azure VM (managed identity)"
            on_machine = _dmi(dmi_dir, "chassis_asset_tag") == AZURE_ASSET_TAG
    for name in names:
        if env.get(name):
            return name
    return machine if on_machine else ""


def detect(host: str, env: Mapping[str, str] | None = None, dmi_dir: Path = DMI_DIR) -> Detection:
    """Which cloud login, if any, an unconfigured registry at ``host`` gets."""
    kind = cloud_of_host(host)
    if kind is None:
        return Detection(None, "", "none (anonymous)")
    # a cloud's host: only now the SDK check and the login modules are needed
    from argocd_image_updater.registry.cloud.ecr import resolve_region
    from argocd_image_updater.registry.cloud.sdk import install_hint, sdk_installed

    env = os.environ if env is None else env
    name = CLOUD_NAMES[kind]
    if not sdk_installed(kind):
        return Detection(
            kind,
            "",
            f"none (anonymous; the host is {name}, but its SDK is not installed: "
            f"{install_hint(kind)})",
        )
    source = identity_source(kind, env, dmi_dir)
    if not source:
        return Detection(
            kind, "", f"none (anonymous; the host is {name}, but no {kind} identity was found)"
        )
    detail = f"auto-detected from host {host}"
    if kind is CloudKind.ECR:
        region = resolve_region(CloudOptions(kind), host, env)
        detail += f", region {region}" if region else ""
    return Detection(kind, f"{kind}:", f"{kind} ({detail}; identity from {source})")
