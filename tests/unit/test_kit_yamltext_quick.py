"""The quick reader of simple block YAML agrees with the full parser wherever it answers, and
the kustomization edits made on it equal those made on the full parse."""

from __future__ import annotations

import io
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from ruamel.yaml import YAML

from argocd_image_updater.kits.yamltext import YamlEditError
from argocd_image_updater.kits.yamltext import quick as quick_module
from argocd_image_updater.kits.yamltext.edit import replace_scalars
from argocd_image_updater.kits.yamltext.quick import quick_parse
from argocd_image_updater.kits.yamltext.tree import Node, parse
from argocd_image_updater.writeback import kustomization as kustomization_module
from argocd_image_updater.writeback.kustomization import update_kustomization

SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def shape(node: Node, top: bool = True) -> Any:
    """What the quick reader must reproduce: kinds, starts, scalar ends, values and styles
    (block collections' ends are not reproduced)."""
    if node.kind == "scalar":
        return ("scalar", node.start, node.end, node.value, node.style, node.anchor, node.flow)
    head = (node.kind, node.start, node.anchor, node.flow)
    if node.kind == "map":
        return (*head, [(shape(k, False), shape(v, False)) for k, v in node.items])
    return (*head, [shape(c, False) for c in node.children])


def agree(text: str) -> bool:
    """Whether the quick reader answered (and then it must agree with the full parser)."""
    quick = quick_parse(text)
    if quick is None:
        return False
    full = parse(text)  # raises when the quick reader accepted something that is not YAML
    assert len(full) == 1 and full[0].root is not None
    assert quick[0].root is not None
    assert shape(quick[0].root) == shape(full[0].root)
    return True


KEYS = st.one_of(
    st.from_regex(r"[a-zA-Z][a-zA-Z0-9_.-]{0,6}", fullmatch=True),
    st.sampled_from(["on", "1", "a b", "x:y", "-x", "null", "images", "newTag"]),
)
TRICKY = st.sampled_from(
    [
        "yes", "1.0", "0755", "a: b", "it's", 'say "x"', "", " lead", "#x", "x #y", "é", "~",
        "x:", "-1", "@x", "a\\b", "sha256:ab", "http://h/p", "a=b", "2026-01-01", "'q'",
    ]
)  # fmt: skip
STRINGS = st.one_of(st.from_regex(r"[a-zA-Z0-9][a-zA-Z0-9.:/_@+=~-]{0,10}", fullmatch=True), TRICKY)
SCALARS = st.one_of(STRINGS, st.integers(-5, 500), st.booleans(), st.none())


@st.composite
def block_texts(draw: st.DrawFn) -> str:
    values = st.recursive(
        SCALARS,
        lambda inner: st.one_of(
            st.lists(inner, min_size=1, max_size=3),
            st.dictionaries(KEYS, inner, min_size=1, max_size=3),
        ),
        max_leaves=12,
    )
    data = draw(st.dictionaries(KEYS, values, min_size=1, max_size=4))
    mapping, sequence = draw(st.sampled_from([(2, 2), (4, 4), (2, 4), (3, 2)]))
    offset = draw(st.sampled_from([0, sequence - 2]))
    yaml = YAML()
    yaml.indent(mapping=mapping, sequence=sequence, offset=offset)
    yaml.width = 4096
    yaml.default_style = draw(st.sampled_from([None, None, '"', "'"]))
    buf = io.StringIO()
    yaml.dump(data, buf)
    lines = []
    for line in buf.getvalue().splitlines():
        decoration = draw(st.sampled_from(["", "", "blank", "comment", "trailing", "spaces"]))
        if decoration == "blank":
            lines.append("")
        elif decoration == "comment":
            lines.append(" " * draw(st.integers(0, 6)) + "# note: x")
        elif decoration == "spaces":
            lines.append("   ")
        lines.append(line + ("  # trailing" if decoration == "trailing" else ""))
    return "\n".join(lines) + draw(st.sampled_from(["\n", "", "\n\n"]))


NOISE = st.sampled_from(
    [*":#-'\"&*!|>{}[]\t\r %@`?,\\\n ", "\u2028", "\x85", "\ufeff", "---\n", "...\n", "  "]
)


@SETTINGS
@given(block_texts())
def test_property_the_quick_reader_agrees_with_the_parser(text: str) -> None:
    agree(text)


@SETTINGS
@given(block_texts(), st.data())
def test_property_noise_is_refused_or_read_the_same(text: str, data: st.DataObject) -> None:
    for _ in range(data.draw(st.integers(1, 3))):
        at = data.draw(st.integers(0, len(text)))
        text = text[:at] + data.draw(NOISE) + text[at:]
    try:
        parse(text)
    except YamlEditError:
        assert quick_parse(text) is None
        return
    agree(text)


def test_plain_kustomizations_are_read_quickly() -> None:
    text = (
        "apiVersion: kustomize.config.k8s.io/v1beta1\n"
        "kind: Kustomization   # a comment\n"
        "\n"
        "resources:\n"
        "- deployment.yaml\n"
        "images:\n"
        "  - name: registry.example.com:5000/team/web  # the app\n"
        "    newName: 'mirror.example.com/web'\n"
        '    newTag: "1.0"\n'
        "    digest: sha256:0123abcd\n"
        "# the end\n"
    )
    assert agree(text)


@pytest.mark.parametrize(
    "text",
    [
        "a: &x 1\nb: *x\n",
        "a: !!str 1\n",
        "a: [1, 2]\n",
        "a: {b: 1}\n",
        "a: |\n  text\n",
        "a: >\n  text\n",
        "a:\nb: 1\n",
        "a: 1\n---\nb: 2\n",
        "---\na: 1\n",
        "%YAML 1.2\n---\na: 1\n",
        "a:\tb\n",
        "a: 1\r\nb: 2\r\n",
        "\ufeffa: 1\n",
        "a: long\n  plain\n",
        "a: 'it''s'\n",
        'a: "x\\ty"\n',
        "? a\n: 1\n",
        "- a\n- b\n",
        "just text\n",
        "  a: 1\n",
        "a: b: c\n",
        "a:b\n",
        "a: x #y\n  c: 1\n",
        "a:\n- \n",
        "a:\n  - - x\n",
        "",
        "# only a comment\n",
    ],
)
def test_what_the_quick_reader_leaves_to_the_parser(text: str) -> None:
    assert quick_parse(text) is None


# --------------------------------------------------------------------- kustomization edits


IMAGE = st.sampled_from(["web", "registry.example.com:5000/team/web", "ghcr.io/o/api"])
TAGS = st.one_of(st.sampled_from(["1.0.0", "1.0", "v2", "latest", "yes", "0755", "a b"]), STRINGS)


@st.composite
def kustomizations(draw: st.DrawFn) -> tuple[str, list[str]]:
    images = draw(st.lists(IMAGE, min_size=1, max_size=3, unique=True))
    indent = draw(st.sampled_from(["", "  "]))
    quote = draw(st.sampled_from(["", "'", '"']))
    lines = ["apiVersion: kustomize.config.k8s.io/v1beta1", "kind: Kustomization", "images:"]
    for image in images:
        lines.append(f"{indent}- name: {image}")
        tag = draw(st.sampled_from(["1.0.0", "v1"]))
        lines.append(f"{indent}  newTag: {quote}{tag}{quote}" + draw(st.sampled_from(["", " # x"])))
        if draw(st.booleans()):
            lines.append(f"{indent}  digest: sha256:{'a' * 8}")
    if draw(st.booleans()):
        lines.append("resources:\n- deployment.yaml")
    text = "\n".join(lines) + "\n"
    wanted = []
    for image in draw(st.lists(st.sampled_from(images), min_size=1, max_size=3)):
        wanted.append(f"{image}:{draw(TAGS)}")
    return text, wanted


def _full_path(monkeypatch: pytest.MonkeyPatch, text: str, wanted: list[str]) -> Any:
    with monkeypatch.context() as patch:
        patch.setattr(kustomization_module, "quick_parse", lambda text: None)
        try:
            return update_kustomization(text, wanted)
        except ValueError as err:
            return type(err)


@SETTINGS
@given(kustomizations())
def test_property_quick_kustomization_edits_equal_the_full_ones(
    sample: tuple[str, list[str]],
) -> None:
    text, wanted = sample
    monkeypatch = pytest.MonkeyPatch()
    try:
        expected = _full_path(monkeypatch, text, wanted)
    finally:
        monkeypatch.undo()
    try:
        got: Any = update_kustomization(text, wanted)
    except ValueError as err:
        got = type(err)
    assert got == expected


def test_replace_scalars_refuses_what_it_cannot_verify_alone() -> None:
    text = "a: 1.0.0\nb: 'x'\nc: |\n  text\n"
    docs = parse(text)
    root = docs[0].root
    assert root is not None
    (_, a), (_, b), (_, c) = root.items
    assert replace_scalars(text, [(a, "2.0.0"), (b, "y")]) == "a: 2.0.0\nb: 'y'\nc: |\n  text\n"
    assert replace_scalars(text, [(a, "1.0")]) is None  # would need quotes: a style change
    assert replace_scalars(text, [(b, "it's")]) == "a: 1.0.0\nb: 'it''s'\nc: |\n  text\n"
    assert replace_scalars(text, [(b, "a\nb")]) is None  # a line break: a style change
    assert replace_scalars(text, [(c, "x")]) is None  # a block scalar
    assert replace_scalars(text, [(a, "x"), (a, "y")]) is None  # overlapping


def test_the_quick_reader_is_used_for_a_plain_kustomization(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A plain kustomization's tag change never calls the full parser."""
    text = "kind: Kustomization\nimages:\n- name: web\n  newTag: 1.0.0\n"

    def refuse(_: str) -> Any:
        raise AssertionError("the full parser was used")

    monkeypatch.setattr(kustomization_module, "parse_tree", refuse)
    monkeypatch.setattr(kustomization_module, "_compose", refuse)
    assert update_kustomization(text, ["web:1.0.1"]) == text.replace("1.0.0", "1.0.1")
    assert update_kustomization(text, ["web:1.0.0"]) is None
    assert quick_module.quick_parse(text) is not None


def test_a_text_ruamel_cannot_handle_is_an_edit_error() -> None:
    """ruamel.yaml raises NotImplementedError for a line separator inside a comment followed by
    a blank line; the edit reports the file as unusable instead of failing the whole group."""
    text = "::on:\n  '1':  # tra\u2028iling\n   \n  A: '0'\n"
    with pytest.raises(YamlEditError, match="unsupported YAML"):
        parse(text)
    assert quick_parse(text) is None
