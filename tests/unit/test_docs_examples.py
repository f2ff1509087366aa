"""Every fenced example in README.md and docs/*.md is checked with the product's own loaders.

Each fence is classified by its content (the info string only says which language it is in):

* shell (``sh``, ``bash``, ``console``, or lines starting with ``$ ``): every
  ``argocd-image-updater …`` command is resolved and parsed by the real click command line (never
  run), and ``run``/``webhook`` flags are also read as settings; ``scripts/…`` must exist;
* YAML: ``registries:`` → the registries.conf parser; ``kind: ImageUpdater`` → the CR model;
  ``kind: Application`` (or an Application's ``metadata:``) → the Application model and, for
  annotations, the legacy annotation reader; ``helm:``/``kustomize:``/``plugin:`` → an override
  file, read as an Application source; ``images:`` → a kustomization's images; a kustomize
  overlay → its ConfigMap literals as settings; Helm values → the chart's keys and its
  ``config.registries`` through the registries.conf parser; a GitHub Actions job → its ``run``
  scripts as shell;
* JSON with ``specversion`` → the CloudEvents webhook parser; a notification payload (``events``,
  or a CloudEvent of type ``io.argoproj.imageupdater.*``) → its events are known kinds;
* PromQL → names a metric of the product (``test_chart_observability`` parses each with
  ``promtool`` and checks the names against what the controller exports);
* Python → compiled (syntax only); a Secret → its values are strings; the settings ConfigMap →
  its keys as settings and ``notifications.yaml`` through the notifications parser; an
  umbrella ``Chart.yaml`` (``apiVersion: v2`` with ``dependencies``) → the chart file reader;
* anything else without a language (diagrams, trees, output) is text.

An example that is intentionally partial can be preceded by ``<!-- docs-example: partial -->``:
it must still parse as YAML, and is not checked further. Keep that rare.
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click
import pytest
import trustme
from ruamel.yaml import YAML
from ruamel.yaml.error import YAMLError

from argocd_image_updater.cli.main import cli
from argocd_image_updater.cli.options import load_settings
from argocd_image_updater.config.annotations import config_from_annotations_v0
from argocd_image_updater.config.imageupdater import parse_image_updater
from argocd_image_updater.config.notifications_file import parse_notifications
from argocd_image_updater.config.registries_conf import parse_registries_conf
from argocd_image_updater.config.settings import resolve
from argocd_image_updater.model.application import Application
from argocd_image_updater.model.chart import ChartSpec
from argocd_image_updater.model.notifications import EventKind
from argocd_image_updater.webhook.events import WebhookRequest
from argocd_image_updater.webhook.types.cloudevents import CloudEventsParser
from argocd_image_updater.writeback.formats.chartfile import chart_versions

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
PARTIAL = "<!-- docs-example: partial -->"
NOTIFICATION_TYPE = "io.argoproj.imageupdater."
SHELL = {"sh", "bash", "shell", "console"}
PROGRAM = "argocd-image-updater"
CHART_VALUES = ROOT / "charts" / "argocd-image-updater" / "values.yaml"
# What a reader puts in for the placeholders of the webhook payload example.
PLACEHOLDERS = {
    "<id>": "1",
    "<region>": "eu-west-1",
    "<account>": "123456789012",
    "<repository-name>": "team/app",
    "<image-tag>": "1.4.2",
    "<image-digest>": "sha256:" + "0" * 64,
}
KUSTOMIZE_IMAGE_KEYS = {"name", "newName", "newTag", "digest"}
KUSTOMIZATION_KEYS = {
    "apiVersion",
    "kind",
    "namespace",
    "resources",
    "components",
    "images",
    "patches",
    "configMapGenerator",
    "secretGenerator",
    "namePrefix",
    "nameSuffix",
    "labels",
    "commonLabels",
    "commonAnnotations",
    "replicas",
    "generatorOptions",
}


@dataclass(frozen=True, slots=True)
class Fence:
    page: str
    line: int
    info: str
    text: str
    partial: bool

    def __str__(self) -> str:
        return f"{self.page}:{self.line}"


def fences() -> Iterator[Fence]:
    for page in PAGES:
        lines = page.read_text(encoding="utf-8").splitlines()
        index = 0
        while index < len(lines):
            opening = re.match(r"^\s*(```+|~~~+)\s*([\w+-]*)", lines[index])
            if opening is None:
                index += 1
                continue
            marker, info = opening.group(1), opening.group(2).lower()
            end = index + 1
            while end < len(lines) and not lines[end].strip().startswith(marker):
                end += 1
            before = [line.strip() for line in lines[max(0, index - 2) : index]]
            yield Fence(
                page.relative_to(ROOT).as_posix(),
                index + 1,
                info,
                "\n".join(lines[index + 1 : end]) + "\n",
                PARTIAL in before,
            )
            index = end + 1


FENCES = list(fences())


# --- shell ------------------------------------------------------------------------------------


def shell_commands(text: str) -> list[list[str]]:
    """The commands of a script: continuations joined, comments dropped, split at | && || ;."""
    joined = re.sub(r"\\\n\s*", " ", text)
    commands: list[list[str]] = []
    for raw in joined.splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        lexer = shlex.shlex(line, posix=True, punctuation_chars="|&;")
        lexer.whitespace_split = True
        lexer.commenters = "#"
        current: list[str] = []
        for token in lexer:
            if token in ("|", "||", "&&", ";", "&"):
                if current:
                    commands.append(current)
                current = []
            else:
                current.append(token)
        if current:
            commands.append(current)
    return commands


def prompt_lines(text: str) -> str:
    """The commands of a transcript: the lines after a ``$ `` prompt, with their continuations."""
    out: list[str] = []
    continued = False
    for line in text.splitlines():
        if line.startswith("$ ") or continued:
            out.append(line[2:] if line.startswith("$ ") else line)
            continued = line.endswith("\\")
    return "\n".join(out)


def check_cli(args: list[str]) -> None:
    """Resolve the subcommand and parse its arguments exactly as the real command line does."""
    parent = click.Context(cli, info_name=PROGRAM)
    name, command, remaining = cli.resolve_command(parent, list(args))
    assert command is not None and name is not None
    with command.make_context(name, remaining, parent=parent) as ctx:
        if name in ("run", "webhook"):
            load_settings(name, dict(ctx.params))  # flag values read as settings


def check_shell(text: str) -> int:
    """Check every command; the number of argocd-image-updater commands seen."""
    seen = 0
    for command in shell_commands(text):
        while command and re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*=.*", command[0]):
            command = command[1:]  # VAR=value prefixes
        if not command:
            continue
        program = command[0]
        if Path(program).name == PROGRAM:
            check_cli(command[1:])
            seen += 1
        elif program.startswith("scripts/"):
            assert (ROOT / program).is_file(), f"{program} does not exist"
    return seen


# --- YAML -------------------------------------------------------------------------------------


def load_yaml(text: str) -> list[Any]:
    return [doc for doc in YAML(typ="safe", pure=True).load_all(text) if doc is not None]


def with_real_ca_files(text: str, ca: Path) -> str:
    """Examples name CA files of their own machine: use a real certificate at their place."""
    return re.sub(r"(ca_file:\s*)\S+", lambda m: f"{m.group(1)}{ca}", text)


def application(**fields: Any) -> dict[str, Any]:
    obj: dict[str, Any] = {
        "apiVersion": "argoproj.io/v1alpha1",
        "kind": "Application",
        "metadata": {"name": "example", "namespace": "argocd"},
        "spec": {"source": {"repoURL": "https://git.example.com/app.git"}},
    }
    obj.update(fields)
    return obj


def check_application(obj: Mapping[str, Any]) -> str:
    app = Application.from_object(obj)
    annotations = (obj.get("metadata") or {}).get("annotations") or {}
    if any(key.startswith("argocd-image-updater.argoproj.io/") for key in annotations):
        config, warnings = config_from_annotations_v0(app)
        assert warnings == [], warnings
        assert config.images, "the annotations configure no image"
    return "Application"


def check_yaml_document(doc: Any, text: str, ca: Path) -> str:
    """Check one document with the loader it is written for; what it was taken for."""
    assert isinstance(doc, (dict, list)), f"not a YAML mapping or list: {doc!r}"
    if isinstance(doc, list):
        scripts = [step["run"] for step in doc if isinstance(step, dict) and "run" in step]
        assert scripts and all(isinstance(s, dict) and ("uses" in s or "run" in s) for s in doc), (
            "a YAML list that is not a CI job's steps"
        )
        assert sum(check_shell(script) for script in scripts) > 0
        return "CI steps"
    kind = doc.get("kind")
    if "registries" in doc and kind is None:
        parse_registries_conf(with_real_ca_files(text, ca), tls_dir=ca.parent / "no-tls-dir")
        return "registries.conf"
    if kind == "ImageUpdater":
        parse_image_updater(doc)
        return "ImageUpdater"
    if kind == "Application":
        return check_application(doc)
    if kind == "Secret":
        values = {**(doc.get("data") or {}), **(doc.get("stringData") or {})}
        assert values and all(isinstance(v, str) for v in values.values()), "a Secret's values"
        return "Secret"
    if kind == "ConfigMap" and doc["metadata"]["name"] == "argocd-image-updater-config":
        data = dict(doc.get("data") or {})
        if "notifications.yaml" in data:
            parse_notifications(data.pop("notifications.yaml"), "notifications.yaml")
        resolve("run", {}, env={}, configmap=data)
        return "settings ConfigMap"
    if set(doc) == {"metadata"}:
        return check_application(application(metadata={"name": "example", **doc["metadata"]}))
    if set(doc) <= {"helm", "kustomize", "plugin", "directory"}:
        app = Application.from_object(application(spec={"source": {"repoURL": "x", **doc}}))
        assert app.sources, "no source read from the override file"
        return "override file"
    if set(doc) == {"images"}:
        for item in doc["images"]:
            assert isinstance(item, dict) and isinstance(item.get("name"), str), item
            assert set(item) <= KUSTOMIZE_IMAGE_KEYS, set(item) - KUSTOMIZE_IMAGE_KEYS
        return "kustomization images"
    if "resources" in doc and set(doc) <= KUSTOMIZATION_KEYS:
        for generator in doc.get("configMapGenerator") or []:
            if generator.get("name") == "argocd-image-updater-config":
                literals = dict(item.split("=", 1) for item in generator.get("literals") or [])
                resolve("run", {}, env={}, configmap=literals)
        return "kustomization"
    if doc.get("apiVersion") == "v2" and "dependencies" in doc:
        deps = doc["dependencies"]
        assert deps and all(isinstance(d, dict) and {"name", "version"} <= set(d) for d in deps)
        specs = [ChartSpec(d["name"], f"{d['repository']}/{d['name']}") for d in deps]
        assert set(chart_versions(text, specs)) == {d["name"] for d in deps}
        return "umbrella Chart.yaml"
    chart_keys = set(load_yaml(CHART_VALUES.read_text())[0])
    if set(doc) <= chart_keys:
        registries = (doc.get("config") or {}).get("registries")
        if registries:
            parse_registries_conf(
                with_real_ca_files(json.dumps({"registries": registries}), ca),
                tls_dir=ca.parent / "no-tls-dir",
            )
        return "Helm values"
    raise AssertionError(
        f"unrecognised YAML example (top-level keys {sorted(doc)}); teach "
        "tests/unit/test_docs_examples.py what it is, or mark it with " + PARTIAL
    )


def check_json(text: str) -> str:
    for placeholder, value in PLACEHOLDERS.items():
        text = text.replace(placeholder, value)
    doc = json.loads(text)
    assert isinstance(doc, dict), "unrecognised JSON example"
    if str(doc.get("type", "")).startswith(NOTIFICATION_TYPE) or "events" in doc:
        return check_notification(doc)
    assert "specversion" in doc, "unrecognised JSON example"
    request = WebhookRequest(
        "POST", headers={"Content-Type": "application/json"}, body=text.encode()
    )
    event = CloudEventsParser().parse(request)
    assert event.repository and event.tag
    return "CloudEvent"


def check_notification(doc: Mapping[str, Any]) -> str:
    """A notification payload (``webhook``, or a ``cloudevents`` one with its ``data``)."""
    kinds = {k.value for k in EventKind}
    events = doc["data"]["events"] if "specversion" in doc else doc["events"]
    assert events and all(e["event"] in kinds for e in events), "unknown notification events"
    if "specversion" in doc:
        assert doc["specversion"] == "1.0"
        assert {e["event"] for e in events} == {doc["type"].removeprefix(NOTIFICATION_TYPE)}
        return "notification CloudEvent"
    assert {"id", "time", "source"} <= set(doc)
    return "notification"


@pytest.fixture(scope="module")
def ca_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("docs-ca") / "ca.pem"
    path.write_bytes(trustme.CA().cert_pem.bytes())
    return path


def check_fence(fence: Fence, ca: Path) -> str:
    if fence.info in SHELL:
        assert check_shell(fence.text) >= 0
        return "shell"
    if fence.info in ("yaml", "yml"):
        docs = load_yaml(fence.text)
        assert docs, "an empty YAML example"
        if fence.partial:
            return "partial YAML"
        return ", ".join(check_yaml_document(doc, fence.text, ca) for doc in docs)
    if fence.info == "json":
        return check_json(fence.text)
    if fence.info == "python":
        compile(fence.text, str(fence), "exec")
        return "Python"
    if fence.info == "promql":  # parsed by promtool in test_chart_observability
        assert re.search(r"\bargocd_image_updater_\w+", fence.text), "names no metric"
        return "PromQL"
    assert fence.info == "", f"unknown fence language '{fence.info}'"
    transcript = prompt_lines(fence.text)
    if transcript:
        check_shell(transcript)
        return "transcript"
    looks_like = re.search(r"^(apiVersion:|kind:|registries:)", fence.text, re.MULTILINE)
    assert looks_like is None, "a YAML example without a language: mark the fence ```yaml"
    return "text"


@pytest.mark.parametrize("fence", FENCES, ids=str)
def test_docs_example(fence: Fence, ca_file: Path) -> None:
    try:
        check_fence(fence, ca_file)
    except (click.ClickException, ValueError, AssertionError, KeyError, YAMLError) as err:
        message = err.format_message() if isinstance(err, click.ClickException) else str(err)
        pytest.fail(f"{fence}: the example does not work: {type(err).__name__}: {message}")


def test_every_kind_of_example_is_found() -> None:
    infos = {fence.info for fence in FENCES}
    assert {"sh", "yaml", "json", ""} <= infos
    assert len(FENCES) > 30
    commands = [f for f in FENCES if f.info == "sh" and PROGRAM in f.text]
    assert len(commands) >= 5


def test_the_checks_catch_broken_examples(ca_file: Path) -> None:
    broken = [
        Fence("x.md", 1, "yaml", "registries:\n- name: ECR\n  api_url: https://x\n  credentials: ecr:   # c\n", False),
        Fence("x.md", 1, "yaml", "registries:\n- name: X\n  api_url: https://x\n  ratelimit: 3\n", False),
        Fence("x.md", 1, "sh", "argocd-image-updater test nginx --no-such-flag\n", False),
        Fence("x.md", 1, "sh", "argocd-image-updater run --interval 5 minutes\n", False),
        Fence("x.md", 1, "sh", "argocd-image-updater tset nginx\n", False),
        Fence("x.md", 1, "", "$ argocd-image-updater run --loglevel loud\n", False),
        Fence("x.md", 1, "yaml", "apiVersion: argocd-image-updater.argoproj.io/v1alpha1\nkind: ImageUpdater\nmetadata: {name: x}\nspec: {applicationRefs: [{images: []}]}\n", False),
        Fence("x.md", 1, "yaml", "something: else\n", False),
        Fence("x.md", 1, "", "apiVersion: v1\nkind: ConfigMap\n", False),
        Fence("x.md", 1, "yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: argocd-image-updater-config}\ndata:\n  notifications.yaml: |\n    targets: [{name: x, type: email}]\n", False),
        Fence("x.md", 1, "json", '{"id": "1", "time": "t", "source": "s", "events": [{"event": "deleted"}]}', False),
    ]  # fmt: skip
    for fence in broken:
        with pytest.raises((click.ClickException, ValueError, AssertionError, YAMLError)):
            check_fence(fence, ca_file)
