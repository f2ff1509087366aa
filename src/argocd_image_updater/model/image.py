"""Image references as the original reads them: ``[alias=][registry/]name[:tag][@digest]``.

Parsing follows the original's two-step algorithm. The part after the first ``=`` is parsed with
the Docker reference grammar (the rules of ``distribution/reference.ParseNormalizedNamed``); when
that fails, typically because the "tag" is a version constraint such as ``~1.0`` or ``>=1.0.1``,
or because a digest is abbreviated, a simple split is used instead: the first path element is
the registry when it looks like a host, the tag is the text after the first ``:`` (or before
``@`` when a digest follows).

Docker Hub normalisation: the registry ``docker.io`` is kept only when it was written, and the
implicit ``library/`` prefix is removed unless the text itself starts with ``library/``. Other
registries keep ``library/`` in the path. Both parse paths normalise the same way, so a
configured ``docker.io/library/nginx:~1.21`` and a live ``docker.io/library/nginx:1.21`` name the
same repository.

The reference grammar is written out here because no maintained Python package implements
Docker's normalising parser with its exact acceptance rules.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

from argocd_image_updater.model.dockerhub import DOCKER_HUB, LEGACY_HOST, is_docker_hub_host

_OFFICIAL_PREFIX: Final = "library/"
_NAME_MAX: Final = 255
_FORMAT_HINT: Final = "write it as [<alias>=][<registry>/]<name>[:<tag or constraint>][@<digest>]"

# The Docker reference grammar (distribution's reference/regexp.go, in words):
#   reference := name [":" tag] ["@" digest];  name := [host[":"port] "/"] path
#   path := component ("/" component)*;  component := [a-z0-9]+ (separator [a-z0-9]+)*
#   separator := [._] | "__" | "-"+;  tag := [\w][\w.-]{0,127}
#   digest := algorithm ":" hex{32,};  algorithm := [A-Za-z][A-Za-z0-9]* ([-_+.][A-Za-z][A-Za-z0-9]*)*
_ALNUM = r"[a-z0-9]+"
_COMPONENT = rf"{_ALNUM}(?:(?:[._]|__|-+){_ALNUM})*"
_PATH = rf"{_COMPONENT}(?:/{_COMPONENT})*"
_HOST_LABEL = r"(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])"
_HOST = rf"(?:{_HOST_LABEL}(?:\.{_HOST_LABEL})*|\[[a-fA-F0-9:]+\])(?::[0-9]+)?"
_TAG = r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}"
_DIGEST = r"[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,}"

_REFERENCE_RE: Final = re.compile(rf"((?:{_HOST}/)?{_PATH})(?::({_TAG}))?(?:@({_DIGEST}))?")
_NAME_RE: Final = re.compile(rf"(?:({_HOST})/)?({_PATH})")
_PATH_RE: Final = re.compile(_PATH)
_HOST_RE: Final = re.compile(_HOST)
_HEX64_RE: Final = re.compile(r"[a-f0-9]{64}")
_LOOSE_DIGEST_RE: Final = re.compile(r"[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:\S+")
# Digest algorithms distribution accepts, with the length of their lowercase hex encoding.
_DIGEST_HEX_LENGTHS: Final = {"sha256": 64, "sha384": 96, "sha512": 128}


class ImageRefError(ValueError):
    """An image reference that cannot be understood; the message names the input."""


@dataclass(frozen=True, slots=True)
class ImageRef:
    """One image: where it lives, its tag (or version constraint) and digest, and its alias."""

    registry: str
    """``host[:port]``; ``""`` for Docker Hub when not written explicitly."""
    name: str
    """Repository path, e.g. ``jannfis/test-image`` or ``nginx``."""
    tag: str | None
    """Tag name; ``None`` when there is none. For configured images: the version constraint."""
    digest: str = ""
    alias: str = ""
    original: str = ""
    """The text this reference was parsed from (``""`` for derived references)."""

    @classmethod
    def parse(cls, text: str) -> ImageRef:
        """Parse ``[alias=]reference`` the way the original does; raise :class:`ImageRefError`."""
        if cls is ImageRef:
            # Applications share images: each text is parsed once (references are immutable).
            return _parse_cached(text)
        return cls._parse(text)

    @classmethod
    def _parse(cls, text: str) -> ImageRef:
        alias, sep, ref = text.strip().partition("=")
        if not sep:
            alias, ref = "", alias
        alias, ref = alias.strip(), ref.strip()
        if not ref:
            if sep:
                raise ImageRefError(
                    f"invalid image reference '{text}': no image after alias '{alias}=': "
                    f"{_FORMAT_HINT}"
                )
            raise ImageRefError(f"invalid image reference '{text}': it is empty: {_FORMAT_HINT}")
        parts = _parse_normalized(ref) or _parse_legacy(ref)
        registry, name, tag, digest = _normalize_hub(ref, *parts)
        try:
            _validate(text, ref, registry, name, tag, digest)
        except ImageRefError as err:
            if alias and alias[-1] in "<>!":
                raise ImageRefError(
                    f"{err}; the text before the first '=' is read as an alias, so a "
                    "constraint containing '=' needs one: <alias>=<image>:<constraint>"
                ) from None
            raise
        return cls(registry, name, tag, digest, alias, text)

    @property
    def full_name(self) -> str:
        """``registry/name`` (just ``name`` when the registry is implicit)."""
        if self.registry and not self.name.startswith(self.registry + "/"):
            return f"{self.registry}/{self.name}"
        return self.name

    @property
    def full_name_with_tag(self) -> str:
        """``registry/name[:tag][@digest]``."""
        text = self.full_name
        if self.tag:
            text += ":" + self.tag
        if self.digest:
            text += "@" + self.digest
        return text

    @property
    def tag_with_digest(self) -> str:
        """``tag@digest``; ``latest@digest`` when there is only a digest; just the tag otherwise."""
        if not self.digest:
            return self.tag or ""
        return f"{self.tag or 'latest'}@{self.digest}"

    @property
    def is_docker_hub(self) -> bool:
        """No registry written, or one of Docker Hub's host names."""
        return not self.registry or is_docker_hub_host(self.registry)

    def with_tag(self, tag: str | None, digest: str = "") -> ImageRef:
        """The same image (registry, name, alias) with another tag/digest; ``original`` is not kept."""
        return ImageRef(self.registry, self.name, tag, digest, self.alias)

    def matches(self, other: ImageRef) -> bool:
        """Same registry and repository; tag, digest and alias do not matter (live-image rule)."""
        return self.registry == other.registry and self.name == other.name

    def __str__(self) -> str:
        prefix = f"{self.alias}=" if self.alias else ""
        return prefix + self.full_name_with_tag


def has_registry_prefix(name: str) -> bool:
    """True when the first path element of ``name`` contains a ``.`` (``gcr.io/x``, not ``x/y``)."""
    first, sep, _ = name.partition("/")
    return bool(sep) and "." in first


def extract_short_form(name: str) -> str:
    """``name`` without its registry prefix (``docker.io/bitnami/nginx`` → ``bitnami/nginx``)."""
    if not has_registry_prefix(name):
        return name
    return name.partition("/")[2]


def tags_equal(a_tag: str | None, a_digest: str, b_tag: str | None, b_digest: str) -> bool:
    """The original's tag equality: digests decide when either side has one, else names do."""
    if a_digest or b_digest:
        return a_digest == b_digest
    return (a_tag or "") == (b_tag or "")


def match_for_digest_update(
    cfg: ImageRef, live: Sequence[ImageRef], latest_digest: str
) -> ImageRef | None:
    """Which live image a ``digest``-strategy image refers to, or ``None``.

    Several containers may run the same repository with different tags. Preferred is a live
    image with the configured tag whose digest is stale, then any live image with that tag (it
    is this image's own container even when up to date). Otherwise a live image of the same
    repository with a stale digest is taken (Argo CD sometimes records only the digest).
    """
    same_repo = [image for image in live if cfg.matches(image)]
    if cfg.tag:
        same_tag = [image for image in same_repo if image.tag == cfg.tag]
        for image in same_tag:
            if image.digest != latest_digest:
                return image
        if same_tag:
            return same_tag[0]
    for image in same_repo:
        if image.digest != latest_digest:
            return image
    return None


_Parts = tuple[str, str, str | None, str]


def _parse_normalized(ref: str) -> _Parts | None:
    """Docker's normalising parse; ``None`` when the reference does not follow the grammar."""
    if _HEX64_RE.fullmatch(ref):
        return None
    domain, remainder = _split_docker_domain(ref)
    remote = remainder.partition(":")[0]
    if remote.lower() != remote:
        return None
    match = _REFERENCE_RE.fullmatch(f"{domain}/{remainder}")
    if match is None:
        return None
    full_name, tag, digest = match.group(1), match.group(2), match.group(3) or ""
    if len(full_name) > _NAME_MAX or (digest and not _is_valid_digest(digest)):
        return None
    name_match = _NAME_RE.fullmatch(full_name)
    if name_match is None:  # cannot happen: the reference pattern contains the name pattern
        return None
    return name_match.group(1) or "", name_match.group(2), tag, digest


def _split_docker_domain(ref: str) -> tuple[str, str]:
    first, sep, rest = ref.partition("/")
    is_host = any(c in first for c in ".:") or first == "localhost" or first.lower() != first
    if sep and is_host:
        domain, remainder = first, rest
    else:
        domain, remainder = DOCKER_HUB, ref
    if domain == LEGACY_HOST:
        domain = DOCKER_HUB
    if domain == DOCKER_HUB and "/" not in remainder:
        remainder = _OFFICIAL_PREFIX + remainder
    return domain, remainder


def _is_valid_digest(digest: str) -> bool:
    algorithm, _, encoded = digest.partition(":")
    length = _DIGEST_HEX_LENGTHS.get(algorithm)
    return length == len(encoded) and re.fullmatch(r"[a-f0-9]+", encoded) is not None


def _parse_legacy(ref: str) -> _Parts:
    """The original's fallback split, used for constraints (``~1.0``) and short digests.

    The registry is the first path element when it looks like a host. The original only checks
    for a ``.``; a port (``:``) or ``localhost`` is accepted as well here, since otherwise
    ``localhost:5000/app:~1.0`` would be split at the port.
    """
    first, sep, rest = ref.partition("/")
    registry = ""
    if sep and ("." in first or ":" in first or first == "localhost"):
        registry, ref = first, rest
    if "@" in ref:
        before, _, digest = ref.partition("@")
        colon, slash = before.rfind(":"), before.rfind("/")
        if colon > slash:
            return registry, before[:colon], before[colon + 1 :], digest
        return registry, before, None, digest
    name, colon_sep, tag = ref.partition(":")
    return registry, name, (tag if colon_sep else None), ""


def _normalize_hub(ref: str, registry: str, name: str, tag: str | None, digest: str) -> _Parts:
    if registry == LEGACY_HOST:
        registry = DOCKER_HUB
    if registry in ("", DOCKER_HUB) and not ref.startswith(_OFFICIAL_PREFIX):
        name = name.removeprefix(_OFFICIAL_PREFIX)
    if registry == DOCKER_HUB and not ref.startswith(DOCKER_HUB):
        registry = ""
    return registry, name, tag, digest


def _validate(text: str, ref: str, registry: str, name: str, tag: str | None, digest: str) -> None:
    def fail(problem: str) -> ImageRefError:
        return ImageRefError(f"invalid image reference '{text}': {problem}: {_FORMAT_HINT}")

    if not name:
        raise fail("the repository name is empty")
    if any(c.isspace() for c in name):
        raise fail(f"repository name '{name}' contains whitespace")
    if name.lower() != name:
        raise fail(f"repository name '{name}' must be lowercase")
    if not _PATH_RE.fullmatch(name):
        raise fail(
            f"repository name '{name}' is not valid (use lowercase letters, digits and "
            "single '.', '_', '__' or '-' between them, path parts separated by '/')"
        )
    if registry and not _HOST_RE.fullmatch(registry):
        raise fail(f"registry '{registry}' is not a host[:port]")
    if tag is not None and not tag.strip():
        raise fail("the tag after ':' is empty")
    if "@" in ref and not digest:
        raise fail("the digest after '@' is empty")
    if digest and not _LOOSE_DIGEST_RE.fullmatch(digest):
        raise fail(f"digest '{digest}' is not <algorithm>:<hex>")


@functools.lru_cache(maxsize=16384)
def _parse_cached(text: str) -> ImageRef:
    return ImageRef._parse(text)
