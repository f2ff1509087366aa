"""The ``directory`` target's pieces: globs like Argo CD's, kinds by API group, kustomize-style
matching, byte-exact edits."""

from __future__ import annotations

from argocd_image_updater.writeback.formats.directory import expand_braces, glob_matches
from argocd_image_updater.writeback.kustomize_images import KustomizeImage
from argocd_image_updater.writeback.manifests import PodSpecAt, new_reference, update_manifests


def test_braces_and_globs() -> None:
    assert expand_braces("{a,b}/*.yaml") == ["a/*.yaml", "b/*.yaml"]
    assert glob_matches("{ignored*,x/*}", "x/deep/file.yaml")
    assert not glob_matches("{ignored*,x/*}", "keep.yaml")


def test_matching_by_repository_like_kustomize() -> None:
    entry = KustomizeImage(name="nginx", new_tag="1.27")
    assert new_reference(entry, "nginx:1.25") == "nginx:1.27"
    assert new_reference(entry, "nginx@sha256:" + "a" * 64) == "nginx:1.27"
    assert new_reference(entry, "docker.io/library/nginx:1.25") is None
    assert new_reference(entry, "nginx-extra:1.0") is None
    assert new_reference(KustomizeImage("nginx", "mirror/nginx", "2"), "nginx") == "mirror/nginx:2"


def test_a_custom_resource_named_job_is_not_a_workload() -> None:
    text = (
        "apiVersion: batch.volcano.sh/v1alpha1\nkind: Job\nspec:\n  template:\n    spec:\n"
        "      containers:\n      - image: app:1  # keep\n"
    )
    entry = KustomizeImage(name="app", new_tag="2")
    assert update_manifests(text, "f.yaml", [entry], ()) == (text, set())
    extra = [PodSpecAt("batch.volcano.sh/Job", "spec.template.spec")]
    assert update_manifests(text, "f.yaml", [entry], extra) == (
        text.replace("app:1", "app:2"),
        {"app"},
    )
