"""The native cloud logins a credential reference can name, and the text after ``ecr:``,
``gcp:`` and ``azure:``.

* ``ecr:`` — nothing, a region (``eu-west-1``), an IAM role ARN to assume
  (``arn:aws:iam::123456789012:role/name``), or both separated by a comma;
* ``gcp:`` — nothing;
* ``azure:`` — nothing, or the client id of a user-assigned managed identity / workload identity.

Pure: no I/O.
"""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass
from typing import Final


class CloudKind(enum.StrEnum):
    """A native cloud login; the value is the credential reference type (``ecr:``, …)."""

    ECR = "ecr"
    GCP = "gcp"
    AZURE = "azure"


# Patterns, compiled (and cached by re) when an option is first checked, not at start.
_REGION: Final = r"[a-z]{2}(?:-[a-z]+)+-\d+"
_ROLE_ARN: Final = r"arn:aws(?:-cn|-us-gov|-iso[a-z-]*)?:iam::\d{12}:role/[\w+=,.@/-]{1,512}"
_GUID: Final = r"[0-9a-fA-F]{8}-(?:[0-9a-fA-F]{4}-){3}[0-9a-fA-F]{12}"


class CloudOptionError(ValueError):
    """The text after the cloud type is not understood; the message says what is expected."""


@dataclass(frozen=True, slots=True)
class CloudOptions:
    """A cloud login reference's options: its cloud and the region, role or client it names."""

    kind: CloudKind
    region: str = ""
    role_arn: str = ""
    client_id: str = ""

    @property
    def text(self) -> str:
        """The canonical option text (what follows ``<kind>:``)."""
        return ",".join(p for p in (self.region, self.role_arn, self.client_id) if p)


def parse_cloud_options(kind: CloudKind, text: str) -> CloudOptions:
    text = text.strip()
    match kind:
        case CloudKind.ECR:
            region = role = ""
            for part in (p.strip() for p in text.split(",") if p.strip()):
                if part.startswith("arn:") and not role:
                    if not re.fullmatch(_ROLE_ARN, part):
                        raise CloudOptionError(
                            "ecr: the role must be an IAM role ARN, "
                            "arn:aws:iam::<12-digit account>:role/<name>"
                        )
                    role = part
                elif re.fullmatch(_REGION, part) and not region:
                    region = part
                else:
                    raise CloudOptionError(
                        "ecr: takes an AWS region (ecr:eu-west-1), an IAM role ARN to assume "
                        "(ecr:arn:aws:iam::<account>:role/<name>), both separated by ',', "
                        "or nothing"
                    )
            return CloudOptions(kind, region=region, role_arn=role)
        case CloudKind.GCP:
            if text:
                raise CloudOptionError(
                    "gcp: takes nothing after ':' (the identity comes from Application "
                    "Default Credentials)"
                )
            return CloudOptions(kind)
        case CloudKind.AZURE:
            if text and not re.fullmatch(_GUID, text):
                raise CloudOptionError(
                    "azure: takes nothing, or the client id (a GUID) of the managed identity "
                    "or workload identity to use"
                )
            return CloudOptions(kind, client_id=text.lower())
