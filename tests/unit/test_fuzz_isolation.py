"""Garbage in any field of an ImageUpdater, any annotation or any credential form never stops a
cycle: the other tenant's application is still updated, and every problem reported names the
object and the field that holds it.

Hypothesis replaces parts of a fully populated ImageUpdater (and of the annotations of two
Applications) with values of the wrong type, random text and near-miss credential references,
then drives the cycle's configuration and planning stages: ``collect`` (over the objects as the
Kubernetes API would list them), ``plan_scans`` and ``plan_app`` with the tags a scan returned.
The scan, write and report stages are driven by a real cycle in
``tests/integration/test_isolation.py``.
"""

from __future__ import annotations

import asyncio
import copy
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from argocd_image_updater.config.registries import RegistryConfig
from argocd_image_updater.controller.sources import LegacyFilter, collect
from argocd_image_updater.model.tags import TagInfo
from argocd_image_updater.plan.decide import plan_app
from argocd_image_updater.plan.jobs import plan_scans
from argocd_image_updater.plan.model import AppPlan, Outcome

P = "argocd-image-updater.argoproj.io"
NS = "argocd"
GOOD_IMAGE = "example.io/good/web"
BAD_IMAGE = "example.io/bad/web"
TAGS = (TagInfo("1.0.0"), TagInfo("1.1.0"), TagInfo("2.0.0"))

SETTINGS: dict[str, Any] = {
    "updateStrategy": "semver",
    "forceUpdate": False,
    "allowTags": "regexp:^[0-9.]+$",
    "ignoreTags": ["*-rc*"],
    "pullSecret": "pullsecret:argocd/regcred",
    "platforms": ["linux/amd64"],
    "allowDowngrade": False,
}
BAD_CR: dict[str, Any] = {
    "apiVersion": f"{P}/v1alpha1",
    "kind": "ImageUpdater",
    "metadata": {"name": "bad", "namespace": NS, "generation": 1, "resourceVersion": "1"},
    "spec": {
        "commonUpdateSettings": dict(SETTINGS),
        "writeBackConfig": {
            "method": "git:secret:argocd/git-creds",
            "gitConfig": {
                "repository": "https://example.com/repo.git",
                "branch": "main",
                "writeBackTarget": "kustomization",
                "pullRequest": {"github": {}, "labels": ["images"]},
            },
        },
        "applicationRefs": [
            {
                "namePattern": "bad-*",
                "labelSelectors": {
                    "matchLabels": {"team": "bad"},
                    "matchExpressions": [{"key": "tier", "operator": "In", "values": ["web"]}],
                },
                "useAnnotations": False,
                "commonUpdateSettings": dict(SETTINGS),
                "writeBackConfig": {"method": "argocd"},
                "images": [
                    {
                        "alias": "web",
                        "imageName": f"{BAD_IMAGE}:^1.0",
                        "commonUpdateSettings": dict(SETTINGS),
                        "manifestTargets": {"kustomize": {"name": BAD_IMAGE}},
                    }
                ],
            }
        ],
    },
}
ANNOTATION_KEYS = [
    f"{P}/{setting}"
    for setting in (
        "image-list",
        "write-back-method",
        "write-back-target",
        "git-branch",
        "git-repository",
        "update-strategy",
        "allow-tags",
        "ignore-tags",
        "force-update",
        "pull-secret",
        "allow-downgrade",
        "web.update-strategy",
        "web.allow-tags",
        "web.tag-match",
        "web.ignore-tags",
        "web.force-update",
        "web.pull-secret",
        "web.platforms",
        "web.allow-downgrade",
        "web.helm.image-name",
        "web.helm.image-tag",
        "web.helm.image-spec",
        "web.kustomize.image-name",
    )
]

CREDENTIAL_FORMS = [
    "nonsense:whatever",
    "pullsecret:",
    "pullsecret:argocd",
    "pullsecret:argocd/",
    "pullsecret:/x",
    "pullsecret:Bad_NS/x",
    "pullsecret:other/regcred",
    "pullsecret:argocd/x#field",
    "secret:argocd/x",
    "secret:argocd/x#",
    "secret:argocd/x#bad field",
    "env:",
    "env:1 2",
    "ext:relative/path",
    "ext:/bin/true",
    "ecr:",
    "ecr:not-a-region,arn:bogus",
    "gcp:extra",
    "azure:,,",
    "=pullsecret:a/b",
    "gcr.io=",
    "gcr.io=env:X",
    ":",
    "",
    " ",
]
TEXT = st.text(
    alphabet=st.sampled_from("ab1.:/=#*?[]^~<>-_ ,@\\\n\u00e9"), max_size=24
) | st.sampled_from(
    [
        *CREDENTIAL_FORMS,
        "newest-buildz",
        "latest",
        "name",
        "digest",
        "regexp:^1.(",
        "regexp:",
        "any",
        "git:secret:",
        "git:secret:a/b/c",
        "git:ssh",
        "main:",
        "a:b:c",
        "windows/arm/v9/x",
        "linux",
        "x=y",
        f"web={BAD_IMAGE}:>>1",
        f"web={BAD_IMAGE}@sha256:xyz",
        "web=",
        "=x",
        ",,,",
        "true",
        "false",
        "yes",
    ]
)
GARBAGE = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.floats() | TEXT,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(TEXT, inner, max_size=3),
    max_leaves=6,
)


def paths(node: Any, prefix: tuple[str | int, ...] = ()) -> list[tuple[str | int, ...]]:
    """Every location in ``node`` (objects and list items), the root excluded."""
    out: list[tuple[str | int, ...]] = []
    items: list[tuple[str | int, Any]] = []
    if isinstance(node, dict):
        items = list(node.items())
    elif isinstance(node, list):
        items = list(enumerate(node))
    for key, value in items:
        out.append((*prefix, key))
        out.extend(paths(value, (*prefix, key)))
    return out


# The API server always lists an object with a name and a namespace: everything else may break.
CR_PATHS = [
    p
    for p in paths(BAD_CR)
    if p not in {("metadata",), ("metadata", "name"), ("metadata", "namespace")}
]


@st.composite
def broken_cr(draw: st.DrawFn) -> dict[str, Any]:
    cr = copy.deepcopy(BAD_CR)
    for path in draw(st.lists(st.sampled_from(CR_PATHS), min_size=1, max_size=4)):
        parent: Any = cr
        try:
            for key in path[:-1]:
                parent = parent[key]
            if draw(st.booleans()) and isinstance(parent, dict):
                parent.pop(path[-1], None)
            else:
                parent[path[-1]] = draw(GARBAGE)
        except (KeyError, IndexError, TypeError):
            continue  # an earlier replacement removed this location
    return cr


ANNOTATIONS = st.dictionaries(st.sampled_from(ANNOTATION_KEYS), TEXT, max_size=8)


def application(name: str, image: str, annotations: Mapping[str, str] = {}) -> dict[str, Any]:
    return {
        "apiVersion": "argoproj.io/v1alpha1",
        "kind": "Application",
        "metadata": {
            "name": name,
            "namespace": NS,
            "labels": {"team": "bad", "tier": "web"},
            "annotations": dict(annotations),
        },
        "spec": {"source": {"repoURL": "https://example.com/r", "path": "p", "kustomize": {}}},
        "status": {"sourceType": "Kustomize", "summary": {"images": [f"{image}:1.0.0"]}},
    }


GOOD_CR = {
    "apiVersion": f"{P}/v1alpha1",
    "kind": "ImageUpdater",
    "metadata": {"name": "good", "namespace": NS, "generation": 1},
    "spec": {
        "applicationRefs": [
            {"namePattern": "good", "images": [{"alias": "web", "imageName": GOOD_IMAGE}]}
        ]
    },
}


@dataclass
class ListedObjects:
    """The objects as the Kubernetes API lists them."""

    applications: list[dict[str, Any]]
    image_updaters: list[dict[str, Any]]

    async def list_applications(self, namespace: str | None) -> list[dict[str, Any]]:
        return copy.deepcopy(self.applications)

    async def list_image_updaters(self, namespace: str | None) -> list[dict[str, Any]]:
        return copy.deepcopy(self.image_updaters)

    async def get_application(self, namespace: str, name: str) -> dict[str, Any] | None:
        return None


@dataclass(frozen=True)
class Scan:
    tags: tuple[TagInfo, ...] = TAGS
    order_hint: Mapping[str, int] | None = None


def names_a_field(message: str) -> bool:
    """``ImageUpdater ns/name field <path>``, ``Application ns/name annotation <key>``, or the
    parse error of the ImageUpdater listing ``<path>: <problem>``."""
    if " field " in message or " annotation " in message:
        return True
    _, parsed, problems = message.partition("invalid ImageUpdater 'argocd/bad': ")
    return bool(parsed) and problems.startswith(("spec", "metadata", "apiVersion", "kind"))


def cycle(store: ListedObjects) -> tuple[Any, dict[str, AppPlan]]:
    collected = asyncio.run(collect(store, [NS], LegacyFilter()))
    plans: dict[str, AppPlan] = {}
    for config, _ in collected.configs:
        jobs = plan_scans(config, RegistryConfig().endpoint_for)
        plans[config.app.name] = plan_app(jobs, {key: Scan() for key in jobs.scan_keys})
    return collected, plans


@settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(cr=broken_cr(), use_annotations=st.booleans(), ann=ANNOTATIONS, legacy=ANNOTATIONS)
def test_garbage_never_stops_the_cycle_and_names_the_field(
    cr: dict[str, Any], use_annotations: bool, ann: dict[str, str], legacy: dict[str, str]
) -> None:
    refs = (
        (cr.get("spec") or {}).get("applicationRefs") if isinstance(cr.get("spec"), dict) else None
    )
    if use_annotations and isinstance(refs, list) and refs and isinstance(refs[0], dict):
        refs[0]["useAnnotations"] = True
    store = ListedObjects(
        applications=[
            application("good", GOOD_IMAGE),
            application("bad-a", BAD_IMAGE, ann),
            application("legacy", BAD_IMAGE, {f"{P}/image-list": f"web={BAD_IMAGE}", **legacy}),
        ],
        image_updaters=[GOOD_CR, cr],
    )
    collected, plans = cycle(store)

    # the other tenant is updated in the same cycle
    assert [c.new_tag for c in plans["good"].changes] == ["2.0.0"]
    assert plans["good"].errors == 0
    # every problem names the object and the field
    for state in collected.crs:
        if state.error is not None:
            assert state.name == "bad", state.error
            assert "argocd/bad" in state.error and names_a_field(state.error), state.error
    for name, plan in plans.items():
        for result in plan.results:
            if result.outcome is Outcome.ERROR:
                assert names_a_field(result.message), (name, result.message)
            for warning in result.warnings:
                assert names_a_field(warning), (name, warning)
