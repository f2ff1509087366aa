"""The Application JSON patch applied to a YAML manifest: only the changed bytes move."""

from __future__ import annotations

import copy
import difflib
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from plans import make_plan
from ruamel.yaml import YAML

from argocd_image_updater.kits.yamltext import YamlPatchError, apply_patch, is_safe_plain
from argocd_image_updater.kits.yamltext import patch as yamlpatch
from argocd_image_updater.kits.yamltext.jsonpatch import apply_plain
from argocd_image_updater.kits.yamltext.scalars import double_quoted
from argocd_image_updater.plan.model import (
    ParamEdit,
)
from argocd_image_updater.plan.patch import json_patch_ops

Op = dict[str, Any]


def load_all(text: str) -> list[Any]:
    return list(YAML(typ="safe", pure=True).load_all(text))


def changed_lines(old: str, new: str) -> list[str]:
    """The +/- lines of a diff, to show that nothing else moved."""
    diff = difflib.ndiff(old.splitlines(keepends=True), new.splitlines(keepends=True))
    return [line for line in diff if line[:1] in "+-"]


def replace(path: str, value: Any) -> Op:
    return {"op": "replace", "path": path, "value": value}


def add(path: str, value: Any) -> Op:
    return {"op": "add", "path": path, "value": value}


P = "/spec/source/helm/parameters"
IMAGES = "/spec/source/kustomize/images"
RV = replace("/metadata/resourceVersion", "12345")

HELM = """\
# The web frontend.
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata:
  name: web          # keep aligned
  namespace: argocd
spec:
  project: default

  source:
    repoURL: https://charts.example.com   # chart repository
    chart: web
    targetRevision: 1.4.2
    helm:
      # Image parameters are managed by the image updater.
      parameters:
      - name: image.repository
        value: registry.example.com/web
        forceString: true
      - name: image.tag
        value: "1.0"     # current tag
        forceString: true
      # end of parameters
  destination:
    server: https://kubernetes.default.svc
    namespace: web
"""

CASES: list[tuple[str, str, list[Op], str]] = [
    (
        "helm-replace-value-keeps-quotes-and-comment",
        HELM,
        [RV, replace(f"{P}/1/value", "1.1")],
        HELM.replace('value: "1.0"     # current tag', 'value: "1.1"     # current tag'),
    ),
    (
        "helm-append-parameter-indentless",
        HELM,
        [add(f"{P}/-", {"name": "sidecar.tag", "value": "2.0.0", "forceString": True})],
        HELM.replace(
            "        forceString: true\n      # end",
            "        forceString: true\n"
            "      - name: sidecar.tag\n"
            "        value: 2.0.0\n"
            "        forceString: true\n"
            "      # end",
        ),
    ),
    (
        "helm-replace-whole-element-adds-and-removes-fields",
        HELM,
        [
            replace(f"{P}/0", {"name": "image.repository", "value": "ghcr.io/acme/web"}),
            replace(f"{P}/1", {"name": "image.tag", "value": "1.2", "forceString": True}),
        ],
        HELM.replace(
            "        value: registry.example.com/web\n        forceString: true\n",
            "        value: ghcr.io/acme/web\n",
        ).replace('"1.0"', '"1.2"'),
    ),
    (
        "helm-indented-sequence-and-new-forcestring",
        """\
spec:
  source:
    helm:
      parameters:
        - name: image.tag   # the tag
          value: v1.0.0
        # a comment between items
        - name: replicas
          value: '3'
""",
        [replace(f"{P}/0", {"name": "image.tag", "value": "v1.1.0", "forceString": True})],
        """\
spec:
  source:
    helm:
      parameters:
        - name: image.tag   # the tag
          value: v1.1.0
          forceString: true
        # a comment between items
        - name: replicas
          value: '3'
""",
    ),
    (
        "helm-append-indented-sequence-quotes-unsafe-values",
        """\
spec:
  source:
    helm:
      parameters:
        - name: image.tag
          value: v1.0.0
""",
        [add(f"{P}/-", {"name": "other.tag", "value": "1.10", "forceString": True})],
        """\
spec:
  source:
    helm:
      parameters:
        - name: image.tag
          value: v1.0.0
        - name: other.tag
          value: "1.10"
          forceString: true
""",
    ),
    (
        "helm-flow-items-stay-flow",
        """\
spec:
  source:
    helm:
      parameters:
      - {name: image.tag, value: "1.0", forceString: true}
""",
        [
            replace(f"{P}/0/value", "1.1"),
            add(f"{P}/-", {"name": "x.tag", "value": "a b", "forceString": True}),
        ],
        """\
spec:
  source:
    helm:
      parameters:
      - {name: image.tag, value: "1.1", forceString: true}
      - {name: x.tag, value: a b, forceString: true}
""",
    ),
    (
        "helm-flow-item-field-removed",
        """\
spec:
  source:
    helm:
      parameters: [{name: image.tag, value: "1.0", forceString: true}]
""",
        [replace(f"{P}/0", {"name": "image.tag", "value": "1.1"})],
        """\
spec:
  source:
    helm:
      parameters: [{name: image.tag, value: "1.1"}]
""",
    ),
    (
        "helm-block-created",
        """\
spec:
  source:
    repoURL: https://charts.example.com
    chart: web  # pinned below
    targetRevision: 1.4.2
  syncPolicy:
    syncOptions:
      - CreateNamespace=true
""",
        [
            add(
                "/spec/source/helm",
                {
                    "parameters": [
                        {"name": "image.name", "value": "nginx", "forceString": True},
                        {"name": "image.tag", "value": "1.25.3", "forceString": True},
                    ]
                },
            )
        ],
        """\
spec:
  source:
    repoURL: https://charts.example.com
    chart: web  # pinned below
    targetRevision: 1.4.2
    helm:
      parameters:
        - name: image.name
          value: nginx
          forceString: true
        - name: image.tag
          value: 1.25.3
          forceString: true
  syncPolicy:
    syncOptions:
      - CreateNamespace=true
""",
    ),
    (
        "helm-parameters-list-created-indentless-file",
        """\
spec:
    source:
        chart: web
        helm:
            valueFiles:
            - values.yaml
            - values-prod.yaml  # production
    destination: {}
""",
        [add(P, [{"name": "image.tag", "value": "1.1", "forceString": True}])],
        """\
spec:
    source:
        chart: web
        helm:
            valueFiles:
            - values.yaml
            - values-prod.yaml  # production
            parameters:
            - name: image.tag
              value: "1.1"
              forceString: true
    destination: {}
""",
    ),
    (
        "helm-null-block-filled",
        """\
spec:
  source:
    chart: web
    helm:   # parameters come later
  destination: {}
""",
        [add("/spec/source/helm", {"parameters": [{"name": "t", "value": "v1"}]})],
        """\
spec:
  source:
    chart: web
    helm:   # parameters come later
      parameters:
        - name: t
          value: v1
  destination: {}
""",
    ),
    (
        "helm-explicit-null-list-filled",
        """\
spec:
  source:
    helm:
      parameters: ~
""",
        [add(P, [{"name": "t", "value": "v1"}])],
        """\
spec:
  source:
    helm:
      parameters:
        - name: t
          value: v1
""",
    ),
    (
        "kustomize-images-indentless",
        """\
spec:
  source:
    path: overlays/prod
    kustomize:
      images:
      - nginx=nginx:1.25.0   # web server
      - redis:7.0
""",
        [RV, replace(f"{IMAGES}/0", "nginx=nginx:1.25.3"), add(f"{IMAGES}/-", "ghcr.io/a/b:2")],
        """\
spec:
  source:
    path: overlays/prod
    kustomize:
      images:
      - nginx=nginx:1.25.3   # web server
      - redis:7.0
      - ghcr.io/a/b:2
""",
    ),
    (
        "kustomize-images-indented-quoted",
        """\
spec:
  source:
    kustomize:
      images:
        - 'nginx=nginx:1.25.0'
        - "redis:7.0"
""",
        [replace(f"{IMAGES}/1", "redis:7.2"), add(f"{IMAGES}/-", "busybox:1.36")],
        """\
spec:
  source:
    kustomize:
      images:
        - 'nginx=nginx:1.25.0'
        - "redis:7.2"
        - busybox:1.36
""",
    ),
    (
        "kustomize-images-flow",
        """\
spec:
  source:
    kustomize:
      images: [nginx:1.25.0, "redis:7.0"]  # flow style
""",
        [replace(f"{IMAGES}/0", "nginx:1.25.3"), add(f"{IMAGES}/-", "a/b:1")],
        """\
spec:
  source:
    kustomize:
      images: [nginx:1.25.3, "redis:7.0", a/b:1]  # flow style
""",
    ),
    (
        "kustomize-images-empty-flow",
        "spec:\n  source:\n    kustomize:\n      images: []\n",
        [add(f"{IMAGES}/-", "a/b:1")],
        "spec:\n  source:\n    kustomize:\n      images: [a/b:1]\n",
    ),
    (
        "kustomize-images-created-in-flow-mapping",
        "spec:\n  source:\n    kustomize: {namePrefix: p-}\n",
        [add(IMAGES, ["a/b:1"])],
        "spec:\n  source:\n    kustomize: {namePrefix: p-, images: [a/b:1]}\n",
    ),
    (
        "plugin-env",
        """\
spec:
  source:
    plugin:
      name: cmp-helmfile
      env:
        - name: IMAGE_NAME
          value: ghcr.io/acme/web
        - name: IMAGE_TAG
          value: "1.0"
""",
        [
            replace("/spec/source/plugin/env/1/value", "1.1"),
            add("/spec/source/plugin/env/-", {"name": "SIDECAR", "value": "envoy:1.28"}),
        ],
        """\
spec:
  source:
    plugin:
      name: cmp-helmfile
      env:
        - name: IMAGE_NAME
          value: ghcr.io/acme/web
        - name: IMAGE_TAG
          value: "1.1"
        - name: SIDECAR
          value: envoy:1.28
""",
    ),
    (
        "multi-source-second",
        """\
spec:
  sources:
    - repoURL: https://charts.example.com
      chart: web
      helm:
        parameters:
          - name: image.tag
            value: "1.0"
    - repoURL: https://git.example.com/deploy.git
      path: overlays/prod
      kustomize:
        images:
          - web=ghcr.io/acme/web:1.0
""",
        [replace("/spec/sources/1/kustomize/images/0", "web=ghcr.io/acme/web:1.1")],
        """\
spec:
  sources:
    - repoURL: https://charts.example.com
      chart: web
      helm:
        parameters:
          - name: image.tag
            value: "1.0"
    - repoURL: https://git.example.com/deploy.git
      path: overlays/prod
      kustomize:
        images:
          - web=ghcr.io/acme/web:1.1
""",
    ),
    (
        "crlf",
        "spec:\r\n  source:\r\n    helm:\r\n      parameters:\r\n"
        "      - name: image.tag\r\n        value: v1\r\n",
        [replace(f"{P}/0/value", "v2"), add(f"{P}/-", {"name": "b", "value": "c"})],
        "spec:\r\n  source:\r\n    helm:\r\n      parameters:\r\n"
        "      - name: image.tag\r\n        value: v2\r\n      - name: b\r\n        value: c\r\n",
    ),
    (
        "no-trailing-newline",
        "spec:\n  source:\n    kustomize:\n      images:\n      - a:1",
        [add(f"{IMAGES}/-", "b:2")],
        "spec:\n  source:\n    kustomize:\n      images:\n      - a:1\n      - b:2",
    ),
    (
        "no-trailing-newline-new-block",
        "spec:\n  source:\n    chart: web",
        [add("/spec/source/helm", {"parameters": [{"name": "a", "value": "true"}]})],
        'spec:\n  source:\n    chart: web\n    helm:\n      parameters:\n        - name: a\n          value: "true"',
    ),
    (
        "only-resource-version",
        HELM,
        [RV],
        HELM,
    ),
]


@pytest.mark.parametrize(
    ("original", "ops", "expected"),
    [c[1:] for c in CASES],
    ids=[c[0] for c in CASES],
)
def test_patch_table(original: str, ops: list[Op], expected: str) -> None:
    out = apply_patch(original, ops)
    assert out == expected, "".join(changed_lines(expected, out))


ANNOTATED = """\
kind: Application
metadata:
  name: shop   # the shop
  annotations:
    team: shop
    hold: web  # held
spec: {}
"""


def test_remove_takes_out_the_key_lines_only() -> None:
    one = apply_patch(ANNOTATED, [{"op": "remove", "path": "/metadata/annotations/hold"}])
    assert one == ANNOTATED.replace("    hold: web  # held\n", "")
    whole = apply_patch(ANNOTATED, [{"op": "remove", "path": "/metadata/annotations"}])
    assert whole == "kind: Application\nmetadata:\n  name: shop   # the shop\nspec: {}\n"
    with pytest.raises(YamlPatchError, match="does not exist"):
        apply_patch(ANNOTATED, [{"op": "remove", "path": "/metadata/labels/x"}])


def test_helm_diff_is_only_the_value_line() -> None:
    out = apply_patch(HELM, [RV, replace(f"{P}/1/value", "1.1")])
    assert changed_lines(HELM, out) == [
        '-         value: "1.0"     # current tag\n',
        '+         value: "1.1"     # current tag\n',
    ]


# --------------------------------------------------------------- ops from json_patch_ops


def test_real_ops_helm_value_and_new_parameter() -> None:
    text = HELM.replace("namespace: argocd\n", "namespace: argocd\n  resourceVersion: '77'\n")
    edits = [
        ParamEdit("helm", "image.repository", "registry.example.com/web", changed=False),
        ParamEdit("helm", "image.tag", "1.1", changed=True),
        ParamEdit("helm", "sidecar.tag", "v3", changed=True),
    ]
    ops = json_patch_ops(load_all(text)[0], make_plan(edits))
    assert ops[0] == RV | {"value": "77"}
    out = apply_patch(text, ops)
    assert out == text.replace('"1.0"', '"1.1"').replace(
        "        forceString: true\n      # end",
        "        forceString: true\n"
        "      - name: sidecar.tag\n"
        "        value: v3\n"
        "        forceString: true\n"
        "      # end",
    )
    assert len(changed_lines(text, out)) == 5


def test_real_ops_create_helm_block() -> None:
    text = "spec:\n  source:\n    repoURL: https://x  # repo\n    chart: c\n"
    edits = [
        ParamEdit("helm", "image.name", "a/b", changed=True),
        ParamEdit("helm", "image.tag", "1.1", changed=True),
    ]
    out = apply_patch(text, json_patch_ops(load_all(text)[0], make_plan(edits)))
    assert out == text + (
        "    helm:\n"
        "      parameters:\n"
        "        - name: image.name\n"
        "          value: a/b\n"
        "          forceString: true\n"
        "        - name: image.tag\n"
        '          value: "1.1"\n'
        "          forceString: true\n"
    )


def test_real_ops_parameter_without_force_string() -> None:
    text = "spec:\n  source:\n    helm:\n      parameters:\n      - name: image.tag\n        value: v1  # tag\n"
    ops = json_patch_ops(
        load_all(text)[0], make_plan([ParamEdit("helm", "image.tag", "v2", changed=True)])
    )
    assert ops == [
        replace(f"{P}/0", {"name": "image.tag", "value": "v2", "forceString": True}),
    ]
    assert apply_patch(text, ops) == text.replace("v1  # tag\n", "v2  # tag\n") + (
        "        forceString: true\n"
    )


def test_real_ops_kustomize_multi_source() -> None:
    text = """\
spec:
  sources:
  - repoURL: https://charts  # values
    chart: c
  - repoURL: https://git
    kustomize:
      images:
      - a/b:1.0
      - x/y:2
"""
    edits = [
        ParamEdit("kustomize", "a/b", "a/b:1.1", changed=True),
        ParamEdit("kustomize", "c/d", "c/d:3", changed=True),
    ]
    plan = make_plan(edits, path=("spec", "sources", 1))
    out = apply_patch(text, json_patch_ops(load_all(text)[0], plan))
    assert out == text.replace("a/b:1.0", "a/b:1.1") + "      - c/d:3\n"


def test_real_ops_plugin_env_created() -> None:
    text = "spec:\n  source:\n    plugin:\n      name: cmp\n"
    edits = [
        ParamEdit("plugin", "IMAGE_NAME", "a/b", changed=True, force_string=False),
        ParamEdit("plugin", "IMAGE_TAG", "1.1", changed=True, force_string=False),
    ]
    out = apply_patch(text, json_patch_ops(load_all(text)[0], make_plan(edits)))
    assert out == text + (
        "      env:\n"
        "        - name: IMAGE_NAME\n"
        "          value: a/b\n"
        "        - name: IMAGE_TAG\n"
        '          value: "1.1"\n'
    )


# ------------------------------------------------------------------------ multi-document

MULTI = """\
# Namespace first
apiVersion: v1
kind: Namespace
metadata:
  name: web
---
# The application
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata:
  name: web
spec:
  source:
    kustomize:
      images:
      - web:1.0
---
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata:
  name: api
spec:
  source:
    kustomize:
      images:
      - api:1.0
...
"""


def test_multi_document_only_selected_changes() -> None:
    out = apply_patch(MULTI, [RV, replace(f"{IMAGES}/0", "web:1.1")], document=1)
    assert out == MULTI.replace("web:1.0", "web:1.1")
    out = apply_patch(MULTI, [add(f"{IMAGES}/-", "sidecar:2")], document=2)
    assert out == MULTI.replace("- api:1.0\n", "- api:1.0\n      - sidecar:2\n")


def test_multi_document_auto_selection() -> None:
    # Only document 1 has kustomize images that a replace of a "web" entry fits…
    with pytest.raises(YamlPatchError, match="documents 1, 2; choose one"):
        apply_patch(MULTI, [replace(f"{IMAGES}/0", "web:1.1")])
    text = MULTI.replace("    kustomize:\n      images:\n      - api:1.0\n", "    chart: api\n")
    out = apply_patch(text, [replace(f"{IMAGES}/0", "web:1.1")])
    assert out == text.replace("web:1.0", "web:1.1")
    with pytest.raises(YamlPatchError, match="none of the 3 documents"):
        apply_patch(text, [replace("/spec/nope", "x")])


# ----------------------------------------------------------------------------- errors

ERRORS: list[tuple[str, str, list[Op], str]] = [
    ("remove-item", HELM, [{"op": "remove", "path": f"{P}/0"}], "only a key of a mapping"),
    ("test-op", HELM, [{"op": "test", "path": f"{P}/0", "value": 1}], "'test' is not supported"),
    ("no-value", HELM, [{"op": "add", "path": f"{P}/-"}], "has no 'value'"),
    ("bad-pointer", HELM, [replace("spec/source", "x")], "starts with '/'"),
    ("bad-escape", HELM, [replace("/spec/a~2b", "x")], "invalid '~' escape"),
    ("whole-document", HELM, [replace("", {})], "whole document"),
    ("missing-key", HELM, [replace("/spec/source/helm/values", "x")], "/spec/source/helm/values"),
    ("index-out-of-range", HELM, [replace(f"{P}/5/value", "x")], "out of range|does not exist"),
    ("missing-parent", HELM, [add("/spec/source/kustomize/images", ["a"])], "does not exist"),
    ("insert-middle", HELM, [add(f"{P}/0", {"name": "a", "value": "b"})], "middle of the sequence"),
    (
        "add-existing",
        HELM,
        [add("/spec/source/chart", "other")],
        "already exists at line 12, column 12",
    ),
    ("int-value", HELM, [replace(f"{P}/1/value", 2)], "unsupported value 2"),
    ("nested-in-element", HELM, [replace(f"{P}/0", {"name": "a", "v": ["x"]})], "flat mappings"),
    ("document-range", HELM, [replace(f"{P}/1/value", "x")], "document 3 does not exist"),
    (
        "mapping-for-scalar",
        "spec:\n  source:\n    kustomize:\n      images:\n      - a:1\n",
        [replace(f"{IMAGES}/0", {"name": "a"})],
        r"/spec/source/kustomize/images/0: the value at line 5, column 9 is a scalar",
    ),
    (
        "block-scalar-where-mapping-expected",
        "spec:\n  source:\n    helm:\n      parameters:\n      - |\n        name=a\n",
        [replace(f"{P}/0", {"name": "a", "value": "b"})],
        r"line 5, column 9 is a block scalar; replacing it with a mapping",
    ),
    (
        "scalar-for-mapping",
        HELM,
        [replace(f"{P}/0", "x")],
        r"line 17, column 9 is a mapping; replacing it with a scalar",
    ),
    (
        "shared-anchor",
        "defaults: &params\n  - name: t\n    value: v1\nspec:\n  source:\n    helm:\n"
        "      parameters: *params\n",
        [replace(f"{P}/0/value", "v2")],
        r"/spec/source/helm/parameters is the alias \*params at line 7",
    ),
    (
        "anchored-value-shared",
        "spec:\n  source:\n    helm:\n      parameters:\n      - name: t\n"
        "        value: &tag v1\n      - name: u\n        value: *tag\n",
        [replace(f"{P}/0/value", "v2")],
        r"carries the anchor &tag, which an alias shares",
    ),
    (
        "alias-inside-replaced-element",
        "base: &b {forceString: true}\nspec:\n  source:\n    helm:\n      parameters:\n"
        "      - <<: *b\n        name: t\n        value: v1\n",
        [replace(f"{P}/0", {"name": "t", "value": "v2"})],
        r"alias \*b",
    ),
    (
        "scalar-parent",
        "spec:\n  source: none\n",
        [add("/spec/source/helm", {"parameters": []})],
        "scalar",
    ),
    (
        "duplicate-key",
        "spec:\n  source:\n    chart: a\n    chart: b\n",
        [replace("/spec/source/chart", "c")],
        "duplicate key|invalid YAML",
    ),
]


@pytest.mark.parametrize(
    ("text", "ops", "message"), [e[1:] for e in ERRORS], ids=[e[0] for e in ERRORS]
)
def test_errors(text: str, ops: list[Op], message: str) -> None:
    document = 3 if "document 3" in message else None
    with pytest.raises(YamlPatchError, match=message):
        apply_patch(text, ops, document=document)


def test_errors_name_pointer_and_position() -> None:
    with pytest.raises(YamlPatchError) as info:
        apply_patch(HELM, [replace("/spec/source/helm/parameters/1/value/x", "v")])
    assert "/spec/source/helm/parameters/1/value" in str(info.value)
    assert "line 21, column 16" in str(info.value)


def test_verification_refuses_a_wrong_edit(monkeypatch: pytest.MonkeyPatch) -> None:
    real = yamlpatch._apply_op

    def sloppy(text: str, index: int, op: dict[str, Any]) -> str:
        return real(text, index, op).replace("namespace: web", "namespace: oops")

    monkeypatch.setattr(yamlpatch, "_apply_op", sloppy)
    with pytest.raises(YamlPatchError, match=r"refusing the patch.*document\(s\) 0 differ"):
        apply_patch(HELM, [replace(f"{P}/1/value", "1.1")])


def test_verification_refuses_a_broken_file(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(yamlpatch, "_apply_op", lambda text, index, op: text + "a: [\n")
    with pytest.raises(YamlPatchError, match="refusing the patch, it would break the file"):
        apply_patch(HELM, [replace(f"{P}/1/value", "1.1")])


def test_input_is_not_mutated() -> None:
    ops = [add(f"{P}/-", {"name": "a", "value": "b"})]
    before = copy.deepcopy(ops)
    apply_patch(HELM, ops)
    assert ops == before


# --------------------------------------------------------------------------- property

_VALUES = st.one_of(
    st.sampled_from(["1.0", "v1.2.3", "yes", "on", "null", "a: b", "#x", "x #y", "", "'q'", "1e3"]),
    st.text(st.characters(codec="utf-8"), max_size=12),
)
_NAMES = st.from_regex(r"[a-z][a-z0-9.]{0,10}", fullmatch=True)


@st.composite
def _scenario(draw: st.DrawFn) -> tuple[str, list[Op], list[str]]:
    params = draw(st.lists(st.tuples(_NAMES, _VALUES, st.booleans()), min_size=1, max_size=5))
    dash = " " * draw(st.sampled_from([6, 8]))
    comments: list[str] = []
    lines = ["# head", "spec:", "  source:", "    helm:", "      parameters:"]
    for n, (name, value, force) in enumerate(params):
        if draw(st.booleans()):
            comments.append(f"{dash}# comment {n}")
            lines.append(comments[-1])
        quoted = value if is_safe_plain(value) else double_quoted(value)
        lines.append(f"{dash}- name: {name}")
        lines.append(f"{dash}  value: {quoted}  # c{n}")
        comments.append(f"# c{n}")
        if force:
            lines.append(f"{dash}  forceString: true")
    lines.append("  destination: {}  # tail")
    comments.extend(["# head", "# tail"])
    text = "\n".join(lines) + "\n"
    ops: list[Op] = []
    size = len(params)
    for _ in range(draw(st.integers(0, 4))):
        kind = draw(st.sampled_from(["value", "element", "append"]))
        value = draw(_VALUES)
        if kind == "append":
            ops.append(add(f"{P}/-", {"name": draw(_NAMES), "value": value, "forceString": True}))
            size += 1
            continue
        i = draw(st.integers(0, size - 1))
        if kind == "value" and i < len(params):
            ops.append(replace(f"{P}/{i}/value", value))
        elif i < len(params):
            element: dict[str, Any] = {"name": params[i][0], "value": value}
            if draw(st.booleans()):
                element["forceString"] = True
            ops.append(replace(f"{P}/{i}", element))
    return text, ops, comments


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_scenario())
def test_property_parameters(scenario: tuple[str, list[Op], list[str]]) -> None:
    text, ops, comments = scenario
    out = apply_patch(text, ops)
    assert load_all(out) == [apply_plain(load_all(text)[0], ops)]
    for comment in comments:
        assert comment in out
    kept = [line for line in text.splitlines() if line.lstrip().startswith("#")]
    assert [line for line in out.splitlines() if line.lstrip().startswith("#")] == kept
