"""An Application reduced to the fields the updater reads: the view, the JSON patch and the ship
tracker's reading of it are those of the whole object."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from argocd_image_updater.model.app_object import compact_object
from argocd_image_updater.model.application import Application, ApplicationError
from argocd_image_updater.report.shipping import AppView
from argocd_image_updater_testing import objects


def whole() -> dict[str, Any]:
    obj = objects.application(
        "web",
        "argocd",
        images=["nginx:1.2"],
        kustomize_images=["nginx:1.2"],
        labels={"team": "a"},
        annotations={"argocd-image-updater.argoproj.io/image-list": "web=nginx"},
    )
    obj["metadata"].update(
        uid="u-1",
        resourceVersion="42",
        generation=3,
        managedFields=[{"manager": "argocd", "fieldsV1": {"f:spec": {}}}],
    )
    obj["spec"]["syncPolicy"] = {"automated": {"prune": True}}
    status = obj["status"]
    status["history"] = [{"id": 1, "revision": "abc", "source": obj["spec"]["source"]}]
    status["operationState"] = {
        "phase": "Failed",
        "message": "one or more objects failed",
        "syncResult": {"resources": [{"kind": "Deployment", "message": "bad"}]},
    }
    status["health"]["message"] = "Deployment is degraded"
    status["conditions"] = [{"type": "SyncError", "message": "boom"}]
    return obj


def test_only_the_fields_read_are_kept_and_they_are_the_same_objects() -> None:
    obj = whole()
    compact = compact_object(obj)
    assert set(compact["metadata"]) == {
        "name",
        "namespace",
        "uid",
        "resourceVersion",
        "generation",
        "labels",
        "annotations",
    }
    assert set(compact["spec"]) == {"source"}
    assert compact["spec"]["source"] is obj["spec"]["source"]
    assert "history" not in compact["status"] and "resources" not in compact["status"]
    assert compact["status"]["operationState"] == {
        "phase": "Failed",
        "message": "one or more objects failed",
    }
    assert "comparedTo" not in compact["status"]["sync"]
    assert compact["kind"] == "Application"


def test_the_view_and_the_ship_trackers_reading_are_unchanged() -> None:
    obj = whole()
    original = copy.deepcopy(obj)
    compact = compact_object(obj)
    assert obj == original  # the listed object itself is not changed
    view, full = Application.from_object(compact), Application.from_object(obj)
    for field in Application.__dataclass_fields__:
        if field != "kept":  # the object itself, compact or whole
            assert getattr(view, field) == getattr(full, field), field
    assert view.raw == compact
    assert AppView.from_object(compact) == AppView.from_object(obj)


def test_multi_source_and_hydrator_specs_are_kept() -> None:
    obj = whole()
    source = obj["spec"].pop("source")
    obj["spec"]["sources"] = [source, {"repoURL": "https://example.com/b.git", "ref": "values"}]
    obj["spec"]["sourceHydrator"] = {"drySource": source, "syncSource": {"targetBranch": "env"}}
    obj["status"]["sourceTypes"] = ["Kustomize", ""]
    compact = compact_object(obj)
    assert compact["spec"] == {k: obj["spec"][k] for k in ("sources", "sourceHydrator")}
    assert compact["status"]["sourceTypes"] == ["Kustomize", ""]


def test_malformed_parts_are_kept_for_the_view_to_name() -> None:
    obj = whole()
    obj["spec"] = ["not", "an", "object"]
    with pytest.raises(ApplicationError, match="spec: expected an object") as compacted:
        Application.from_object(compact_object(obj))
    with pytest.raises(ApplicationError) as direct:
        Application.from_object(obj)
    assert str(compacted.value) == str(direct.value)
    obj = whole()
    obj["status"]["summary"] = "images"
    with pytest.raises(ApplicationError, match=r"status\.summary"):
        Application.from_object(compact_object(obj))
    assert compact_object("not an object") == "not an object"
    assert compact_object({}) == {}


def test_views_keep_repeated_strings_once_and_the_object_as_text() -> None:
    def listed(name: str) -> dict[str, Any]:
        repo = "".join(["https://example.com/", "gitops.git"])  # a new string each time
        return {
            "metadata": {"name": name, "namespace": "".join(["ar", "gocd"])},
            "spec": {"source": {"repoURL": repo, "kustomize": {"images": ["".join(["a:", "1"])]}}},
            "status": {"sync": {"status": "".join(["Syn", "ced"])}},
        }

    first = Application.from_object(compact_object(listed("a")))
    second = Application.from_object(compact_object(listed("b")))
    assert first.namespace is second.namespace
    one, two = first.write_source(), second.write_source()
    assert one.repo_url is two.repo_url
    assert one.kustomize_images[0] is two.kustomize_images[0]
    assert one.kustomize_images == ("a:1",)
    # the object itself is kept serialized and given back whole
    assert isinstance(first.kept, bytes)
    assert first.raw == compact_object(listed("a"))
    assert one.raw == listed("a")["spec"]["source"]
