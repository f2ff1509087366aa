"""Helm chart and OCI artifact references (pure): parsing, rendering, matching a source.

A chart entry (``charts[].chart`` of an ImageUpdater, or an entry of the ``chart-list``
annotation) names where the versions of a chart or OCI artifact are listed:

* ``oci://<registry>/<path>/<name>[:<constraint>]`` — an OCI repository (a Helm chart pushed by
  ``helm push``, or any OCI artifact); its tags are the versions, listed by the registry scanner
  like an image's (same credentials, rate limits and one scan per repository);
* ``https://<helm repo>/<name>[:<constraint>]`` (``http://`` too) — a chart of a classic Helm
  repository, whose versions come from ``<helm repo>/index.yaml``.

The constraint is read like an image's tag part (a semver constraint by default, or whatever the
update strategy takes); ``:`` after the last ``/`` starts it, so ports stay part of the host.

An Application source holds the chart (:meth:`ChartRef.matches`) when it is:

* a classic Helm OCI source: ``repoURL: <registry>/<path>`` (no scheme, or ``oci://``) and
  ``chart: <name>``;
* a Helm repository source: ``repoURL: <helm repo>`` and ``chart: <name>``;
* an Argo CD native OCI source: ``repoURL: oci://<registry>/<path>/<name>`` without ``chart``.

The version is the source's ``targetRevision``. Host names compare case-insensitively and a
trailing ``/`` is ignored; paths compare exactly.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Final, Literal

from argocd_image_updater.model.update_settings import UpdateSettings

ChartKind = Literal["oci", "helm"]

OCI_SCHEME: Final = "oci://"
_HTTP_SCHEMES: Final = ("https://", "http://")
CHART_FORMAT_HINT: Final = (
    "write oci://<registry>/<path>/<name>[:<constraint>] or "
    "https://<helm repository>/<name>[:<constraint>]"
)


class ChartRefError(ValueError):
    """A chart reference that cannot be understood; the message names the input."""


def is_chart_reference(text: str) -> bool:
    """Whether ``text`` is written as a chart reference (``oci://``, ``https://``, ``http://``)
    rather than an image."""
    return text.strip().lower().startswith((OCI_SCHEME, *_HTTP_SCHEMES))


def _host_lower(rest: str) -> str:
    host, sep, path = rest.partition("/")
    return host.lower() + sep + path


@dataclass(frozen=True, slots=True)
class ChartRef:
    """One chart or OCI artifact, and the version constraint it was configured with.

    ``repository_url`` is the Helm repository (``https://host/path``) or the OCI repository
    holding the chart's *parent* path (``oci://registry/path``); ``name`` is the chart name (the
    last path segment). For OCI, ``registry`` is ``host[:port]`` and ``repository`` the path in
    the registry (``path/name``).
    """

    kind: ChartKind
    repository_url: str
    name: str
    constraint: str = ""
    original: str = ""

    @classmethod
    def parse(cls, text: str) -> ChartRef:
        """Parse a chart reference; raise :class:`ChartRefError` naming ``text``."""
        ref = text.strip()
        lowered = ref.lower()
        if lowered.startswith(OCI_SCHEME):
            kind: ChartKind = "oci"
            scheme, rest = OCI_SCHEME, ref[len(OCI_SCHEME) :]
        elif lowered.startswith(_HTTP_SCHEMES):
            kind = "helm"
            scheme, _, rest = ref.partition("://")
            scheme = scheme.lower() + "://"
        else:
            raise ChartRefError(f"invalid chart reference '{text}': {CHART_FORMAT_HINT}")
        head, slash, last = rest.rstrip().rpartition("/")
        name, colon, constraint = last.partition(":")
        if not slash or not head or not name:
            raise ChartRefError(
                f"invalid chart reference '{text}': no chart name after the repository: "
                f"{CHART_FORMAT_HINT}"
            )
        if colon and not constraint.strip():
            raise ChartRefError(
                f"invalid chart reference '{text}': empty constraint after ':': {CHART_FORMAT_HINT}"
            )
        host = head.split("/", 1)[0]
        if not host or any(c.isspace() for c in head + name) or "?" in rest or "#" in rest:
            raise ChartRefError(f"invalid chart reference '{text}': {CHART_FORMAT_HINT}")
        if "@" in host:
            raise ChartRefError(
                f"invalid chart reference '{text}': credentials do not belong in the reference; "
                "use pullSecret (OCI) or an Argo CD repository Secret (Helm repositories)"
            )
        return cls(
            kind=kind,
            repository_url=scheme + _host_lower(head.rstrip("/")),
            name=name,
            constraint=constraint.strip(),
            original=text,
        )

    @property
    def is_oci(self) -> bool:
        return self.kind == "oci"

    @property
    def registry(self) -> str:
        """``host[:port]`` of an OCI chart (``""`` for Helm repositories)."""
        if not self.is_oci:
            return ""
        return self.repository_url[len(OCI_SCHEME) :].split("/", 1)[0]

    @property
    def repository(self) -> str:
        """The chart's path inside its registry (OCI) — ``path/name`` — or its name (Helm)."""
        if not self.is_oci:
            return self.name
        rest = self.repository_url[len(OCI_SCHEME) :]
        _, _, path = rest.partition("/")
        return f"{path}/{self.name}" if path else self.name

    @property
    def location(self) -> str:
        """``<repository URL>/<name>`` without constraint, e.g. ``oci://ghcr.io/org/app``."""
        return f"{self.repository_url}/{self.name}"

    def with_version(self, version: str) -> str:
        """``<location>:<version>``, as shown in messages and ``test`` output."""
        return f"{self.location}:{version}"

    def matches(self, repo_url: str, chart: str) -> bool:
        """Whether an Application source (``repoURL``, ``chart``) holds this chart."""
        url = repo_url.strip().rstrip("/")
        lowered = url.lower()
        if self.is_oci:
            if lowered.startswith(OCI_SCHEME):
                bare = url[len(OCI_SCHEME) :]
            elif "://" in url:
                return False
            else:
                bare = url
            bare = _host_lower(bare)
            parent = self.repository_url[len(OCI_SCHEME) :]
            if chart.strip():
                return bare == parent and chart.strip() == self.name
            return lowered.startswith(OCI_SCHEME) and bare == f"{parent}/{self.name}"
        if not chart.strip() or not lowered.startswith(_HTTP_SCHEMES):
            return False
        scheme, _, rest = url.partition("://")
        return (
            f"{scheme.lower()}://{_host_lower(rest)}" == self.repository_url
            and chart.strip() == self.name
        )


@dataclass(frozen=True, slots=True)
class ChartSpec:
    """One chart to manage in one application, with its merged settings.

    ``chart`` is the configured reference, verbatim; ``origin`` locates the entry (e.g.
    ``ImageUpdater ns/name field spec.applicationRefs[0].charts[1]``), ``""`` when unknown.
    """

    alias: str
    chart: str
    settings: UpdateSettings = field(default_factory=UpdateSettings)
    origin: str = field(default="", compare=False)

    @property
    def key(self) -> str:
        """The alias, or the chart reference when there is none."""
        return self.alias or self.chart

    def where(self, subfield: str) -> str:
        """Names ``subfield`` of this chart's configuration, e.g. ``….charts[1].chart``."""
        if not self.origin:
            return f"chart '{self.key}' field {subfield}"
        if " annotation " in self.origin:
            return self.origin
        return f"{self.origin}.{subfield}"
