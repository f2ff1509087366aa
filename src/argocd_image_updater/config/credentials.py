"""Registry credential references: the grammar (pure).

``[<registry>=]<type>:<source>`` with the types ``env:``, ``ext:``, ``secret:``, ``pullsecret:``
and the native cloud logins ``ecr:``, ``gcp:``, ``azure:`` (also bare: ``ecr``, ``gcp``,
``azure``; their options are :mod:`argocd_image_updater.config.cloud_options`).
:func:`parse_credential_ref` turns the text into a typed :class:`CredentialRef`, and
:func:`split_user_password` reads the ``<username>:<password>`` value a reference points to.
Reading the values (environment, scripts, Secrets, cloud logins) is
:mod:`argocd_image_updater.registry.credentials`.
"""

from __future__ import annotations

import enum
import os
import re
from dataclasses import dataclass
from typing import Final

from argocd_image_updater.config.cloud_options import (
    CloudKind,
    CloudOptionError,
    CloudOptions,
    parse_cloud_options,
)
from argocd_image_updater.config.secrets import (
    is_valid_field,
    is_valid_namespace,
    is_valid_secret_name,
)
from argocd_image_updater.model.registry import Credentials

PULL_SECRET_FIELD: Final = ".dockerconfigjson"
_ENV_NAME_RE: Final = re.compile(r"[-._a-zA-Z][-._a-zA-Z0-9]*")
ACCEPTED_FORMS: Final = (
    "use env:<VARIABLE>, ext:</absolute/path/to/script>, secret:<namespace>/<name>#<field>, "
    "pullsecret:<namespace>/<name>, ecr[:<region>][,<role-arn>], gcp or azure[:<client-id>], "
    "optionally prefixed with <registry>="
)


class CredentialRefError(ValueError):
    """A credential reference that cannot be parsed; says which part is wrong."""


class CredentialKind(enum.StrEnum):
    ENV = "env"
    EXT = "ext"
    SECRET = "secret"
    PULLSECRET = "pullsecret"
    ECR = "ecr"
    GCP = "gcp"
    AZURE = "azure"


CLOUD_KINDS: Final = frozenset({CredentialKind.ECR, CredentialKind.GCP, CredentialKind.AZURE})


@dataclass(frozen=True, slots=True)
class CredentialRef:
    """A parsed reference. ``registry`` is the optional ``<registry>=`` prefix (informational)."""

    kind: CredentialKind
    registry: str = ""
    env_name: str = ""
    script_path: str = ""
    namespace: str = ""
    name: str = ""
    field: str = ""
    option: str = ""
    """What follows ``ecr:``/``gcp:``/``azure:`` (canonical form)."""

    @property
    def cloud(self) -> CloudOptions:
        """The options of a cloud login reference (``ecr:``, ``gcp:``, ``azure:``)."""
        return parse_cloud_options(CloudKind(self.kind.value), self.option)

    @property
    def key(self) -> str:
        """The canonical source, e.g. ``env:VAR`` or ``secret:ns/name#field`` (no registry)."""
        match self.kind:
            case CredentialKind.ENV:
                return f"env:{self.env_name}"
            case CredentialKind.EXT:
                return f"ext:{self.script_path}"
            case CredentialKind.SECRET:
                return f"secret:{self.namespace}/{self.name}#{self.field}"
            case CredentialKind.PULLSECRET:
                return f"pullsecret:{self.namespace}/{self.name}"
            case CredentialKind.ECR | CredentialKind.GCP | CredentialKind.AZURE:
                return f"{self.kind}:{self.option}"

    def __str__(self) -> str:
        return f"{self.registry}={self.key}" if self.registry else self.key


def _ref_error(problem: str) -> CredentialRefError:
    return CredentialRefError(f"invalid credential reference: {problem}; {ACCEPTED_FORMS}")


def _parse_secret_location(kind: str, location: str) -> tuple[str, str]:
    namespace, sep, name = location.partition("/")
    if not sep:
        raise _ref_error(f"{kind}: needs <namespace>/<name>, got '{location}' (no '/')")
    if not namespace:
        raise _ref_error(f"{kind}: the namespace before '/' is empty")
    if not name:
        raise _ref_error(f"{kind}: the secret name after '/' is empty")
    if not is_valid_namespace(namespace):
        raise _ref_error(f"{kind}: '{namespace}' is not a valid Kubernetes namespace name")
    if not is_valid_secret_name(name):
        raise _ref_error(f"{kind}: '{name}' is not a valid Kubernetes secret name")
    return namespace, name


def parse_credential_ref(text: str, require_registry_prefix: bool = False) -> CredentialRef:
    """Parse ``[<registry>=]<type>:<source>``; the type keyword is case-insensitive.

    The cloud logins may be written without the colon when nothing follows (``ecr``, ``gcp``,
    ``azure``): ``credentials: ecr:`` is not valid YAML, ``credentials: ecr`` is.

    Raises :class:`CredentialRefError` naming the wrong part. The text of an unrecognised
    reference is not repeated in the message, as it may be a mistyped secret.
    """
    spec = text.strip()
    registry = ""
    if "=" in spec:
        registry, _, spec = spec.partition("=")
        registry = registry.strip()
        if not registry:
            raise _ref_error("the registry before '=' is empty")
    elif require_registry_prefix:
        raise _ref_error(
            "a '<registry>=' prefix is required here, e.g. 'gcr.io=pullsecret:ns/name'"
        )
    kind_text, sep, source = spec.partition(":")
    if not sep and kind_text.strip().lower() in CLOUD_KINDS:
        sep = ":"  # the bare cloud words `ecr`, `gcp`, `azure` mean `ecr:`, `gcp:`, `azure:`
    if not sep:
        raise _ref_error("no '<type>:' found")
    try:
        kind = CredentialKind(kind_text.strip().lower())
    except ValueError:
        raise _ref_error("unknown credential type (it is the part before ':')") from None
    if not source and kind not in CLOUD_KINDS:
        raise _ref_error(f"nothing after '{kind}:'")
    match kind:
        case CredentialKind.ENV:
            if _ENV_NAME_RE.fullmatch(source) is None:
                raise _ref_error(
                    "env: needs an environment variable name (letters, digits, '_', '-', '.')"
                )
            return CredentialRef(kind, registry, env_name=source)
        case CredentialKind.EXT:
            if not os.path.isabs(source):
                raise _ref_error(f"ext: path to script must be absolute, but is '{source}'")
            return CredentialRef(kind, registry, script_path=source)
        case CredentialKind.SECRET:
            location, sep, field = source.partition("#")
            if not sep or not field:
                raise _ref_error(
                    "secret: needs a field after '#' (secret:<namespace>/<name>#<field>)"
                )
            if not is_valid_field(field):
                raise _ref_error(f"secret: '{field}' is not a valid secret field name")
            namespace, name = _parse_secret_location("secret", location)
            return CredentialRef(kind, registry, namespace=namespace, name=name, field=field)
        case CredentialKind.PULLSECRET:
            if "#" in source:
                raise _ref_error(
                    "pullsecret: takes no '#<field>' (it always reads .dockerconfigjson); "
                    "use secret:<namespace>/<name>#<field> for another field"
                )
            namespace, name = _parse_secret_location("pullsecret", source)
            return CredentialRef(
                kind, registry, namespace=namespace, name=name, field=PULL_SECRET_FIELD
            )
        case CredentialKind.ECR | CredentialKind.GCP | CredentialKind.AZURE:
            try:
                options = parse_cloud_options(CloudKind(kind.value), source)
            except CloudOptionError as exc:
                raise _ref_error(str(exc)) from None
            return CredentialRef(kind, registry, option=options.text)


def split_user_password(value: str) -> Credentials | None:
    """``<username>:<password>`` (one trailing newline dropped, both parts non-empty), else
    None: the value an ``env:`` variable, an ``ext:`` script's output or a ``secret:`` field
    holds."""
    username, sep, password = value.removesuffix("\n").removesuffix("\r").partition(":")
    if not sep or not username or not password:
        return None
    return Credentials(username, password)
