"""The documentation stays in step with the code.

Every setting (flag, environment variable, ConfigMap key), annotation key, ImageUpdater CRD
field, registries.conf key, credential form, CLI command and flag, metric (with its type and
labels) and reason code must be documented; relative links between the docs must resolve; and
the semver examples in docs/strategies.md must be what the policy chooses.
(``test_docs_metrics.py`` checks metric names; here their types and labels are checked too.)
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, Final

import click
import pytest
from prometheus_client.metrics import MetricWrapperBase
from ruamel.yaml import YAML

# Importing these modules registers their metrics.
import argocd_image_updater.notify.metrics
import argocd_image_updater.report.cycle_metrics
import argocd_image_updater.webhook.dispatch
import argocd_image_updater.writeback.git.process  # noqa: F401
from argocd_image_updater.cli.main import cli
from argocd_image_updater.cli.options import CONFIG_DIR_ENV
from argocd_image_updater.config import annotations as ann
from argocd_image_updater.config.credentials import CredentialKind
from argocd_image_updater.config.imageupdater_writeback import (
    MSG_ONE_PROVIDER,
)
from argocd_image_updater.config.registries_conf import RegistryEntry
from argocd_image_updater.config.settings import FILE_KEYS, OPTIONS
from argocd_image_updater.model.pr_hosts import (
    ONE_HOST_MESSAGE,
    ONE_HOST_RULE,
    PR_HOST_KEYS,
    PR_HOSTS,
)
from argocd_image_updater.model.tags import TagInfo
from argocd_image_updater.observe.metrics import REGISTRY
from argocd_image_updater.plan.model import ImageReason
from argocd_image_updater.policy.select import Policy, choose
from argocd_image_updater.policy.strategies import named, strategies
from argocd_image_updater.policy.verdicts import TagVerdict
from argocd_image_updater.writeback.formats import formats as target_formats

ROOT: Final = Path(__file__).resolve().parents[2]
DOCS: Final = ROOT / "docs"
CRD: Final = (
    ROOT / "config" / "crd" / "bases" / "argocd-image-updater.argoproj.io_imageupdaters.yaml"
)


def _read(name: str) -> str:
    return (DOCS / name).read_text(encoding="utf-8")


def _all_docs() -> str:
    return "\n".join(p.read_text(encoding="utf-8") for p in sorted(DOCS.glob("*.md")))


def _missing(items: set[str], text: str) -> list[str]:
    return sorted(item for item in items if item not in text)


# --- settings -------------------------------------------------------------------------------


def test_every_setting_is_documented() -> None:
    text = _read("configuration.md")
    wanted: set[str] = {"--config-dir", CONFIG_DIR_ENV}
    for option in OPTIONS:
        wanted.update(f"`{flag}`" for flag in (option.flag, *option.aliases))
        wanted.update(f"`{env}`" for env in option.env)
        if option.configmap:
            wanted.add(f"`{option.configmap}`")
    assert _missing(wanted, text) == []
    assert _missing({f"`{key}`" for key in FILE_KEYS}, _all_docs()) == []


# --- annotations ----------------------------------------------------------------------------


def _annotation_keys() -> set[str]:
    """Every key the annotation reader knows, with ``<alias>`` for per-image keys."""
    keys = {
        value
        for name, value in vars(ann).items()
        if name.endswith("_KEY") and isinstance(value, str)
    }
    for alias in ("", "<alias>"):
        settings = ann.setting_keys(alias)
        keys.update(
            value
            for field in dataclasses.fields(settings)
            if (value := getattr(settings, field.name)) is not None
        )
    source = Path(ann.__file__).read_text(encoding="utf-8")
    for setting in re.findall(r'image_key\(\w+, "([a-z.-]+)"\)', source):
        keys.add(ann.image_key("<alias>", setting))
    for setting in re.findall(r'app_key\("([a-z.-]+)"\)', source):
        keys.add(ann.app_key(setting))
    return keys


def test_every_annotation_is_documented() -> None:
    keys = _annotation_keys()
    assert ann.image_key("<alias>", "helm.image-spec") in keys
    assert ann.image_key("<alias>", "tag-match") in keys
    assert _missing({f"`{key}`" for key in keys}, _read("reference.md")) == []


# --- the ImageUpdater CRD -------------------------------------------------------------------


def _crd_fields() -> Iterator[tuple[str, str]]:
    """``(object path, field)`` for every field of the CRD's spec and status."""
    crd = YAML(typ="safe").load(CRD.read_text(encoding="utf-8"))
    root = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]

    def walk(node: Mapping[str, Any], path: str) -> Iterator[tuple[str, str]]:
        if node.get("type") == "array":
            yield from walk(node["items"], path + "[]")
            return
        for name, sub in (node.get("properties") or {}).items():
            yield path, name
            if sub.get("type") in ("object", "array"):
                yield from walk(sub, f"{path}.{name}")

    for top in ("spec", "status"):
        yield from walk(root["properties"][top], top)


def _reference_sections() -> list[tuple[set[str], set[str]]]:
    """For each section of reference.md: the object paths of its ``At …`` line, its fields."""
    sections: list[tuple[set[str], set[str]]] = []
    for block in re.split(r"^#{2,4} ", _read("reference.md"), flags=re.M):
        at = re.search(r"^At (.+?)(?:\.\s|\.$)", block, flags=re.M | re.S)
        if at is None:
            continue
        paths = set(re.findall(r"`((?:spec|status)[^`]*)`", at.group(1)))
        fields = set(re.findall(r"^\| `([A-Za-z]+)` \|", block, flags=re.M))
        sections.append((paths, fields))
    return sections


def test_every_crd_field_is_documented() -> None:
    sections = _reference_sections()
    fields = list(_crd_fields())
    assert len(fields) > 60
    missing = [
        f"{path}.{name}"
        for path, name in fields
        if not any(path in paths and name in names for paths, names in sections)
    ]
    assert missing == [], "add these fields to a section of docs/reference.md"


# --- registries.conf and credentials ---------------------------------------------------------


def test_every_registries_conf_key_is_documented() -> None:
    keys = {f"| `{key}` |" for key in RegistryEntry.model_fields}
    assert _missing(keys, _read("reference.md")) == []
    assert _missing(keys, _read("registries.md")) == []


def test_every_credential_form_is_documented() -> None:
    forms = {f"`{kind.value}:" for kind in CredentialKind}
    assert _missing(forms, _read("reference.md")) == []


# --- command line ---------------------------------------------------------------------------


def _commands() -> dict[str, click.Command]:
    ctx = click.Context(cli)
    assert isinstance(cli, click.Group)
    commands = {name: cli.get_command(ctx, name) for name in cli.list_commands(ctx)}
    return {name: command for name, command in commands.items() if command is not None}


def test_every_command_and_flag_is_documented() -> None:
    reference = _read("reference.md")
    everything = _all_docs()
    commands = _commands()
    assert {"run", "webhook", "test", "template", "version", "demo"} <= set(commands)
    missing: list[str] = []
    for name, command in commands.items():
        if f"| `{name}" not in reference:
            missing.append(name)
        for param in command.params:
            if isinstance(param, click.Argument):
                if (param.human_readable_name or "").upper() not in reference:
                    missing.append(f"{name} {param.human_readable_name}")
                continue
            for flag in (*param.opts, *param.secondary_opts):
                if flag not in ("-h", "--help") and f"`{flag}`" not in everything:
                    missing.append(f"{name} {flag}")
    assert missing == []


# --- metrics --------------------------------------------------------------------------------


def _documented_metrics() -> dict[str, tuple[str, tuple[str, ...]]]:
    """Metric name → (type, labels) from the metric tables of the docs."""
    out: dict[str, tuple[str, tuple[str, ...]]] = {}
    for page in ("operations.md", "webhooks.md", "reference.md"):
        previous: tuple[str, ...] = ()
        for line in _read(page).splitlines():
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if len(cells) < 4 or not cells[0].startswith("`argocd_image_updater_"):
                continue
            labels_cell = cells[2]
            if labels_cell == "same":
                labels = previous
            else:
                labels = tuple(re.findall(r"`([a-z_]+)`", labels_cell))
            previous = labels
            for name in re.findall(r"`(argocd_image_updater_[a-z0-9_]+)`", cells[0]):
                out[name] = (cells[1], labels)
    return out


def test_every_metric_is_documented_with_type_and_labels() -> None:
    documented = _documented_metrics()
    collectors = [c for c in REGISTRY._collector_to_names if isinstance(c, MetricWrapperBase)]
    assert len(collectors) > 20
    problems: list[str] = []
    for collector in collectors:
        kind = str(collector._type)
        name = str(collector._name)
        labels = tuple(collector._labelnames)
        exported = f"{name}_total" if kind == "counter" and not name.endswith("_total") else name
        if exported not in documented:
            problems.append(f"{exported}: not in a metrics table")
            continue
        doc_kind, doc_labels = documented[exported]
        if doc_kind != kind:
            problems.append(f"{exported}: documented as {doc_kind!r}, is a {kind}")
        if set(doc_labels) != set(labels):
            problems.append(f"{exported}: documented labels {doc_labels}, has {labels}")
    assert problems == []


# --- reason codes ---------------------------------------------------------------------------


def test_every_reason_code_is_documented() -> None:
    codes = {f"`{r.value}`" for r in ImageReason} | {f"`{r.value}`" for r in TagVerdict}
    assert _missing(codes, _all_docs()) == []


# --- pull request hosts ---------------------------------------------------------------------


def test_pull_request_hosts_are_documented_and_in_the_crd() -> None:
    """The PullRequest table of reference.md lists exactly the registered hosts, each with its
    summary; git-writeback.md names each public API; the CRD has one field per host and the
    same "exactly one" rule."""
    section = re.search(r"^### PullRequest\n(.+?)(?=^### )", _read("reference.md"), re.M | re.S)
    assert section is not None
    rows = re.findall(r"^\| `([A-Za-z]+)` \| [^|]+ \| ([^|]+) \|", section.group(1), re.M)
    documented = {name: meaning.strip() for name, meaning in rows if name != "labels"}
    assert documented == {host.key: host.summary for host in PR_HOSTS}
    assert f"`{MSG_ONE_PROVIDER}`" in section.group(1)
    pages = _read("git-writeback.md")
    public = [h.public_api for h in PR_HOSTS if h.public_api]
    assert [api for api in public if f"`{api}`" not in pages] == []
    assert [h.name for h in PR_HOSTS if h.name not in pages] == []

    crd = YAML(typ="safe").load(CRD.read_text(encoding="utf-8"))
    spec = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
    git = spec["properties"]["writeBackConfig"]["properties"]["gitConfig"]
    pull_request = git["properties"]["pullRequest"]
    assert [k for k in pull_request["properties"] if k != "labels"] == list(PR_HOST_KEYS)
    rules = pull_request["x-kubernetes-validations"]
    assert [r["message"] for r in rules] == [MSG_ONE_PROVIDER] == [ONE_HOST_MESSAGE]
    assert [" ".join(r["rule"].split()) for r in rules] == [ONE_HOST_RULE]
    for host in PR_HOST_KEYS:
        assert list(pull_request["properties"][host]["properties"]) == ["apiURL"]


# --- update strategies ----------------------------------------------------------------------


def test_every_update_strategy_is_documented() -> None:
    """Each strategy (and legacy name) has its row in the strategies table, and says what
    "below the running tag" means for it."""
    text = _read("strategies.md")
    missing: list[str] = []
    for strategy in strategies():
        names = " ".join(f"`{n}`" for n in strategy.legacy_names)
        row = re.search(rf"^\| `{re.escape(strategy.name)}`[^\n]*\|[^\n]*$", text, re.M)
        if row is None or any(f"`{n}`" not in row.group(0) for n in strategy.legacy_names):
            missing.append(f"strategies table: `{strategy.name}` {names}".strip())
        if not re.search(rf"^\| `{re.escape(strategy.name)}` \| [^|]+ \|$", text, re.M):
            missing.append(f"never-downgrade table: `{strategy.name}`")
    assert missing == []


def test_every_write_back_target_format_is_documented() -> None:
    """Each target format with a prefix has its rows in the writeBackTarget table."""
    text = _read("write-back.md")
    prefixes = [f.prefix for f in target_formats() if f.prefix is not None]
    assert prefixes
    assert [p for p in prefixes if not re.search(rf"^\| `{re.escape(p)}[`:]", text, re.M)] == []


# --- strategies.md examples -----------------------------------------------------------------


def _semver_examples() -> tuple[list[str], list[tuple[str, str | None]]]:
    text = _read("strategies.md")
    marker = re.search(r"<!-- semver-examples: (.+?) -->\n((?:\|.*\n)+)", text)
    assert marker is not None, "the semver examples table is missing"
    tags = marker.group(1).split()
    rows: list[tuple[str, str | None]] = []
    for line in marker.group(2).splitlines()[2:]:
        cells = [c.strip() for c in line.strip().strip("|").split(" | ")]
        constraint = cells[0].strip("`").replace("\\|", "|")
        chosen = None if cells[1] == "none" else cells[1].strip("`")
        rows.append((constraint, chosen))
    assert len(rows) >= 10
    return tags, rows


@pytest.mark.parametrize(("constraint", "chosen"), _semver_examples()[1])
def test_semver_examples_are_what_the_policy_chooses(constraint: str, chosen: str | None) -> None:
    tags, _ = _semver_examples()
    selection = choose(Policy(named("semver"), constraint), [TagInfo(t) for t in tags])
    assert (selection.chosen.name if selection.chosen else None) == chosen


# --- links ----------------------------------------------------------------------------------


def _slug(heading: str) -> str:
    """GitHub's anchor for a heading."""
    text = heading.strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def _anchors(text: str) -> set[str]:
    text = re.sub(r"^```.*?^```", "", text, flags=re.M | re.S)
    seen: dict[str, int] = {}
    anchors: set[str] = set()
    for heading in re.findall(r"^#{1,6} (.+)$", text, flags=re.M):
        slug = _slug(heading)
        count = seen.get(slug, 0)
        seen[slug] = count + 1
        anchors.add(slug if count == 0 else f"{slug}-{count}")
    return anchors


def test_relative_links_between_docs_resolve() -> None:
    broken: list[str] = []
    for page in sorted(DOCS.glob("*.md")):
        text = re.sub(r"^```.*?^```", "", page.read_text(encoding="utf-8"), flags=re.M | re.S)
        for target in re.findall(r"\]\(([^)\s]+)\)", text):
            if re.match(r"[a-z]+:", target):
                continue  # https:, mailto:
            file, _, anchor = target.partition("#")
            path = (page.parent / file).resolve() if file else page
            if not path.exists():
                broken.append(f"{page.name}: {target}")
                continue
            if (
                anchor
                and path.suffix == ".md"
                and anchor not in _anchors(path.read_text(encoding="utf-8"))
            ):
                broken.append(f"{page.name}: {target} (no such heading)")
    assert broken == []


def test_the_index_links_every_page() -> None:
    index = _read("README.md")
    pages = {p.name for p in DOCS.glob("*.md")} - {"README.md"}
    assert _missing({f"]({page})" for page in pages}, index) == []
