"""Who set a field last, from ``managedFields``; and the Kubernetes fake keeping them as the
API server does on Update operations."""

from __future__ import annotations

from typing import Any

from argocd_image_updater.model.managed_fields import field_manager
from argocd_image_updater_testing.managed_fields import manager_of, updated

IMAGES = ("spec", "source", "kustomize", "images")


def app(images: list[str], **extra: Any) -> dict[str, Any]:
    return {
        "apiVersion": "argoproj.io/v1alpha1",
        "kind": "Application",
        "metadata": {"name": "shop", "namespace": "argocd", **extra},
        "spec": {"source": {"repoURL": "r", "kustomize": {"images": images}}},
    }


def test_the_last_writer_of_a_list_owns_it_and_others_keep_the_rest() -> None:
    created = app(["web:1.0.0"])
    created["metadata"]["managedFields"] = updated(None, created, "kubectl")
    ours = app(["web:1.1.0"])
    ours["metadata"]["managedFields"] = updated(created, ours, "argocd-image-updater")
    assert field_manager(ours, IMAGES) == "argocd-image-updater"
    assert field_manager(ours, IMAGES, ignore="argocd-image-updater") == ""
    assert field_manager(ours, ("spec", "source", "repoURL")) == "kubectl"

    reset = app(["web:1.0.0"])
    reset["metadata"]["managedFields"] = updated(ours, reset, "argocd-controller")
    assert field_manager(reset, IMAGES, ignore="argocd-image-updater") == "argocd-controller"
    managers = [e["manager"] for e in reset["metadata"]["managedFields"]]
    assert managers == ["kubectl", "argocd-controller"]  # ours owned nothing any more
    [controller] = [e for e in reset["metadata"]["managedFields"] if e["manager"] != "kubectl"]
    assert controller["operation"] == "Update"
    assert controller["fieldsV1"] == {"f:spec": {"f:source": {"f:kustomize": {"f:images": {}}}}}
    # a multi-source application: the whole list of sources is one field
    assert field_manager(reset, ("spec", "sources", 1, "kustomize", "images")) == ""

    same = updated(reset, app(["web:1.0.0"]), "someone-else")
    assert same == reset["metadata"]["managedFields"]  # nothing changed: nothing recorded


def test_the_manager_is_the_field_manager_or_the_user_agent_name() -> None:
    assert manager_of("kubectl/v1.30.0 (linux/amd64)", None) == "kubectl"
    assert manager_of("argocd-image-updater/1.0", "") == "argocd-image-updater"
    assert manager_of("python", "argocd-controller") == "argocd-controller"
    assert field_manager({"metadata": {}}, IMAGES) == ""
