"""``gitConfig.pullRequest.<host>`` in the ImageUpdater: every host of ``model.pr_hosts`` is a
field with an optional ``apiURL``, exactly one is set, and the write-back settings carry the
host and its API base."""

from __future__ import annotations

from typing import Any

import pytest

from argocd_image_updater.config.imageupdater import ImageUpdaterError, parse_image_updater
from argocd_image_updater.config.imageupdater_refs import ref_write_back
from argocd_image_updater.model.pr_hosts import ONE_HOST_MESSAGE, PR_HOST_KEYS
from argocd_image_updater.model.update_config import PullRequestSettings


def _cr(pull_request: Any) -> dict[str, Any]:
    return {
        "apiVersion": "argocd-image-updater.argoproj.io/v1alpha1",
        "kind": "ImageUpdater",
        "metadata": {"name": "iu", "namespace": "argocd"},
        "spec": {
            "writeBackConfig": {"method": "git", "gitConfig": {"pullRequest": pull_request}},
            "applicationRefs": [
                {"namePattern": "app", "images": [{"alias": "a", "imageName": "x"}]}
            ],
        },
    }


def _settings(pull_request: Any) -> PullRequestSettings | None:
    cr = parse_image_updater(_cr(pull_request))
    return ref_write_back(cr, cr.spec.application_refs[0]).git.pull_request


@pytest.mark.parametrize("key", PR_HOST_KEYS)
def test_every_host_is_a_field_with_an_optional_api_url(key: str) -> None:
    assert _settings({key: {}, "labels": ["a"]}) == PullRequestSettings(key, ("a",))
    api = "https://git.example.com:8443/sub/api"
    assert _settings({key: {"apiURL": api}}) == PullRequestSettings(key, (), api)


@pytest.mark.parametrize(
    ("pull_request", "problem"),
    [
        ({}, f"spec.writeBackConfig.gitConfig.pullRequest: {ONE_HOST_MESSAGE}"),
        (
            {"gitea": {}, "bitbucket": {}},
            f"spec.writeBackConfig.gitConfig.pullRequest: {ONE_HOST_MESSAGE}",
        ),
        (
            {"azureDevOps": {"apiURL": "dev.azure.com/contoso"}},
            "spec.writeBackConfig.gitConfig.pullRequest.azureDevOps.apiURL: String should match",
        ),
        (
            {"gitea": {"apiURL": "https://user:secret@git.example.com/api/v1"}},
            "spec.writeBackConfig.gitConfig.pullRequest.gitea.apiURL: String should match",
        ),
        (
            {"bitbucketServer": {"url": "https://bb.example.com"}},
            "spec.writeBackConfig.gitConfig.pullRequest.bitbucketServer.url: unknown field",
        ),
    ],
)
def test_bad_host_sections_name_the_field(pull_request: Any, problem: str) -> None:
    with pytest.raises(ImageUpdaterError) as info:
        parse_image_updater(_cr(pull_request))
    assert any(line.startswith(problem) for line in info.value.errors), info.value.errors
