"""The webhook types are one list: every module of ``webhook/types`` is a type, and the dispatcher,
the secret settings, the docs and the chart name exactly the registered types."""

from __future__ import annotations

import json
import pkgutil
import re
from dataclasses import replace
from pathlib import Path

from chart_helm import CHART, load_values

from argocd_image_updater.config.settings import OPTIONS
from argocd_image_updater.model.webhook_types import WEBHOOK_TYPES
from argocd_image_updater.webhook import types as type_package
from argocd_image_updater.webhook.dispatch import KNOWN_TYPES
from argocd_image_updater.webhook.registry import webhook_types
from argocd_image_updater.webhook.router import WebhookParsers

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"


def test_every_module_of_the_types_package_is_one_registered_type() -> None:
    modules = {info.name for info in pkgutil.iter_modules(type_package.__path__)}
    assert len(webhook_types()) == len(modules) >= 8
    names = [t.name for t in webhook_types()]
    assert names == sorted(set(names))
    assert len({t.setting for t in webhook_types()}) == len(names)
    parsers = WebhookParsers()
    for webhook_type in webhook_types():
        assert parsers.for_type(webhook_type.name).type_name == webhook_type.name
    assert parsers.types == tuple(names)
    assert frozenset(names) == KNOWN_TYPES


def test_every_registered_type_is_its_description_in_the_model() -> None:
    assert [t.name for t in webhook_types()] == [d.name for d in WEBHOOK_TYPES]
    for webhook_type, description in zip(webhook_types(), WEBHOOK_TYPES, strict=True):
        assert webhook_type.describes(description)
        assert not webhook_type.describes(replace(description, setting="other"))


def test_derived_names_of_a_type() -> None:
    [aliyun] = [t for t in webhook_types() if t.name == "aliyun-acr"]
    assert (aliyun.option, aliyun.flag, aliyun.env, aliyun.secret_key, aliyun.chart_key) == (
        "aliyun_acr_webhook_secret",
        "--aliyun-acr-webhook-secret",
        "ALIYUN_ACR_WEBHOOK_SECRET",
        "webhook.aliyun-acr-secret",
        "aliyunAcr",
    )
    assert [t.name for t in webhook_types() if t.needs_secret] == ["generic"]


def test_each_type_has_its_secret_setting() -> None:
    secret_options = {o.name: o for o in OPTIONS if o.name.endswith("_webhook_secret")}
    assert set(secret_options) == {t.option for t in webhook_types()}
    for webhook_type in webhook_types():
        option = secret_options[webhook_type.option]
        assert (option.flag, option.env, option.secret) == (
            webhook_type.flag,
            (webhook_type.env,),
            True,
        )
        assert option.commands == frozenset({"run", "webhook"})


def _docs_secret_rows() -> list[list[str]]:
    text = (DOCS / "webhooks.md").read_text(encoding="utf-8")
    header = "| `type` | Secret key | Environment variable | Where the sender puts the secret |"
    lines = text.split(header, 1)[1].splitlines()[2:]
    rows = []
    for line in lines:
        if not line.startswith("|"):
            break
        rows.append([cell.strip() for cell in line.strip().strip("|").split("|")])
    return rows


def test_the_docs_table_lists_exactly_the_registered_types() -> None:
    documented = sorted(_docs_secret_rows())
    expected = sorted(
        [f"`{t.name}`", f"`{t.secret_key}`", f"`{t.env}`", t.secret_in] for t in webhook_types()
    )
    assert documented == expected


def test_every_type_has_its_configuration_section_in_the_docs() -> None:
    text = (DOCS / "webhooks.md").read_text(encoding="utf-8")
    missing = [t.name for t in webhook_types() if f"type={t.name}" not in text]
    assert missing == []


def test_the_chart_values_name_exactly_the_registered_types() -> None:
    keys = {t.chart_key for t in webhook_types()}
    values = load_values(CHART / "values.yaml")
    assert set(values["webhook"]["secrets"]) == keys
    schema = json.loads((CHART / "values.schema.json").read_text(encoding="utf-8"))
    secrets_schema = schema["properties"]["webhook"]["properties"]["secrets"]
    assert set(secrets_schema["properties"]) == keys
    full = load_values(CHART / "ci" / "full-values.yaml")
    assert set(full["webhook"]["secrets"]) == keys
    readme = (CHART / "README.md").read_text(encoding="utf-8")
    assert set(re.findall(r"^\| `webhook\.secrets\.(\w+)` \|", readme, re.M)) == keys


def test_the_chart_stores_each_type_under_its_secret_key() -> None:
    template = (CHART / "templates" / "secret.yaml").read_text(encoding="utf-8")
    [pairs] = re.findall(r"\$keys := dict ((?:\"[^\"]+\" ?)+)", template)
    words = re.findall(r"\"([^\"]+)\"", pairs)
    assert dict(zip(words[::2], words[1::2], strict=True)) == {
        t.chart_key: t.secret_key for t in webhook_types()
    }
