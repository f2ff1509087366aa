"""The ``aliyun-acr`` webhook type."""

from __future__ import annotations

from webhook_requests import (
    ALIYUN_PAYLOAD,
    SECRET,
    post,
    rejected,
    with_changes,
)

from argocd_image_updater.webhook.types.aliyun_acr import AliyunAcrParser

# --------------------------------------------------------------------------- Aliyun ACR (17g)

ALIYUN = AliyunAcrParser()


def test_aliyun_validation() -> None:
    ALIYUN.validate(post({}, query={"secret": SECRET}), SECRET)
    ALIYUN.validate(post({}), None)
    assert rejected(ALIYUN.validate, post({}, method="GET"), SECRET).reason == "bad-method"
    assert rejected(ALIYUN.validate, post({}), SECRET).message == "missing webhook secret"
    wrong = rejected(ALIYUN.validate, post({}, query={"secret": "nope"}), SECRET)
    assert wrong.message == "invalid webhook secret"


def test_aliyun_registry_priority() -> None:
    from_query = ALIYUN.parse(post(ALIYUN_PAYLOAD, query={"registry_url": "query.cr.com"}))
    assert from_query.registry == "query.cr.com"
    beijing = with_changes(ALIYUN_PAYLOAD, "repository.region", "cn-beijing")
    assert ALIYUN.parse(post(beijing)).registry == "registry.cn-beijing.aliyuncs.com"
    no_region = with_changes(ALIYUN_PAYLOAD, "repository.region", ...)
    assert ALIYUN.parse(post(no_region)).registry == ""


def test_aliyun_repository_from_namespace_and_name() -> None:
    payload = with_changes(ALIYUN_PAYLOAD, "repository.repo_full_name", "")
    assert ALIYUN.parse(post(payload)).repository == "namespace/repoTest"


def test_aliyun_parse_errors() -> None:
    no_tag = with_changes(ALIYUN_PAYLOAD, "push_data.tag", ...)
    assert rejected(ALIYUN.parse, post(no_tag)).message == "tag not found in webhook payload"
    assert rejected(ALIYUN.parse, post(None, raw=b"[1,")).reason == "malformed-json"
