"""The JSON patch for the argocd writer: only changed parameters, guarded by resourceVersion."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from plans import make_plan

from argocd_image_updater.plan.model import (
    AppPlan,
    ParamEdit,
)
from argocd_image_updater.plan.patch import PatchError, json_patch_ops, pointer


def _unescape(token: str) -> str:
    return token.replace("~1", "/").replace("~0", "~")


def apply_patch(doc: Any, ops: list[dict[str, Any]]) -> Any:
    """A minimal RFC 6902 applier (add, replace, remove, test) for the tests."""
    doc = copy.deepcopy(doc)
    for op in ops:
        tokens = [_unescape(t) for t in op["path"].split("/")[1:]]
        parent = doc
        for token in tokens[:-1]:
            parent = parent[int(token)] if isinstance(parent, list) else parent[token]
        last = tokens[-1]
        if op["op"] == "test":
            current = parent[int(last)] if isinstance(parent, list) else parent[last]
            assert current == op["value"], op
        elif op["op"] == "add":
            if isinstance(parent, list):
                if last == "-":
                    parent.append(op["value"])
                else:
                    parent.insert(int(last), op["value"])
            else:
                parent[last] = op["value"]
        elif op["op"] == "replace":
            if isinstance(parent, list):
                assert int(last) < len(parent)
                parent[int(last)] = op["value"]
            else:
                assert last in parent, f"replace of missing member {op['path']}"
                parent[last] = op["value"]
        elif op["op"] == "remove":
            del parent[int(last) if isinstance(parent, list) else last]
        else:  # pragma: no cover - the planner emits nothing else
            raise AssertionError(op)
    return doc


def app(source: dict[str, Any], *, rv: str = "42") -> dict[str, Any]:
    return {
        "apiVersion": "argoproj.io/v1alpha1",
        "kind": "Application",
        "metadata": {"name": "app", "namespace": "ns", "resourceVersion": rv},
        "spec": {"project": "default", "source": source},
        "status": {"sourceType": "Helm"},
    }


def test_pointer_escapes() -> None:
    assert pointer(("spec", "sources", 1, "a/b~c")) == "/spec/sources/1/a~1b~0c"


def test_helm_value_replaced_in_place_and_new_param_appended() -> None:
    obj = app(
        {
            "repoURL": "https://x",
            "helm": {
                "parameters": [
                    {"name": "other", "value": "keep"},
                    {"name": "image.name", "value": "a/b", "forceString": True},
                    {"name": "image.tag", "value": "1.0", "forceString": True},
                ]
            },
        }
    )
    edits = [
        ParamEdit("helm", "image.name", "a/b", changed=False),
        ParamEdit("helm", "image.tag", "1.1", changed=True),
        ParamEdit("helm", "extra.tag", "2", changed=True),
    ]
    ops = json_patch_ops(obj, make_plan(edits))
    assert ops == [
        {"op": "replace", "path": "/metadata/resourceVersion", "value": "42"},
        {"op": "replace", "path": "/spec/source/helm/parameters/2/value", "value": "1.1"},
        {
            "op": "add",
            "path": "/spec/source/helm/parameters/-",
            "value": {"name": "extra.tag", "value": "2", "forceString": True},
        },
    ]
    expected = copy.deepcopy(obj)
    expected["spec"]["source"]["helm"]["parameters"][2]["value"] = "1.1"
    expected["spec"]["source"]["helm"]["parameters"].append(
        {"name": "extra.tag", "value": "2", "forceString": True}
    )
    assert apply_patch(obj, ops) == expected


def test_param_without_force_string_is_replaced_whole() -> None:
    obj = app({"helm": {"parameters": [{"name": "image.tag", "value": "1.0"}]}})
    ops = json_patch_ops(obj, make_plan([ParamEdit("helm", "image.tag", "1.1", changed=True)]))
    assert ops[1] == {
        "op": "replace",
        "path": "/spec/source/helm/parameters/0",
        "value": {"name": "image.tag", "value": "1.1", "forceString": True},
    }


def test_missing_helm_block_is_created() -> None:
    obj = app({"repoURL": "https://x", "chart": "c"})
    edits = [
        ParamEdit("helm", "image.name", "a/b", changed=True),
        ParamEdit("helm", "image.tag", "1.1", changed=True),
    ]
    ops = json_patch_ops(obj, make_plan(edits))
    out = apply_patch(obj, ops)
    assert out["spec"]["source"] == {
        "repoURL": "https://x",
        "chart": "c",
        "helm": {
            "parameters": [
                {"name": "image.name", "value": "a/b", "forceString": True},
                {"name": "image.tag", "value": "1.1", "forceString": True},
            ]
        },
    }
    assert ops[1]["op"] == "add"
    assert ops[1]["path"] == "/spec/source/helm"


def test_helm_block_without_parameters_gets_list_added() -> None:
    obj = app({"helm": {"valueFiles": ["v.yaml"]}})
    ops = json_patch_ops(obj, make_plan([ParamEdit("helm", "image.tag", "1.1", changed=True)]))
    assert ops[1] == {
        "op": "add",
        "path": "/spec/source/helm/parameters",
        "value": [{"name": "image.tag", "value": "1.1", "forceString": True}],
    }
    out = apply_patch(obj, ops)
    assert out["spec"]["source"]["helm"]["valueFiles"] == ["v.yaml"]


def test_kustomize_images_created_and_replaced() -> None:
    obj = app({"kustomize": {"namePrefix": "p-"}})
    edit = ParamEdit("kustomize", "a/b", "a/b:1.1", changed=True)
    out = apply_patch(obj, json_patch_ops(obj, make_plan([edit])))
    assert out["spec"]["source"]["kustomize"] == {"namePrefix": "p-", "images": ["a/b:1.1"]}

    obj = app({"kustomize": {"images": ["x/y:1", "a/b:1.0"]}})
    ops = json_patch_ops(obj, make_plan([edit]))
    assert ops[1:] == [
        {"op": "replace", "path": "/spec/source/kustomize/images/1", "value": "a/b:1.1"}
    ]
    assert apply_patch(obj, ops)["spec"]["source"]["kustomize"]["images"] == ["x/y:1", "a/b:1.1"]


def test_plugin_env_created() -> None:
    obj = app({"plugin": {"name": "cmp"}})
    edits = [
        ParamEdit("plugin", "IMAGE_NAME", "a/b", changed=True, force_string=False),
        ParamEdit("plugin", "IMAGE_TAG", "1.1", changed=True, force_string=False),
    ]
    out = apply_patch(obj, json_patch_ops(obj, make_plan(edits)))
    assert out["spec"]["source"]["plugin"] == {
        "name": "cmp",
        "env": [{"name": "IMAGE_NAME", "value": "a/b"}, {"name": "IMAGE_TAG", "value": "1.1"}],
    }


def test_multi_source_path() -> None:
    obj = {
        "metadata": {"name": "app", "namespace": "ns", "resourceVersion": "7"},
        "spec": {
            "sources": [
                {"repoURL": "https://charts", "chart": "c", "helm": {"parameters": []}},
                {"repoURL": "https://git", "path": "k", "kustomize": {"images": ["a/b:1.0"]}},
            ]
        },
    }
    edit = ParamEdit("kustomize", "a/b", "a/b:1.1", changed=True)
    ops = json_patch_ops(obj, make_plan([edit], path=("spec", "sources", 1)))
    assert ops == [
        {"op": "replace", "path": "/metadata/resourceVersion", "value": "7"},
        {"op": "replace", "path": "/spec/sources/1/kustomize/images/0", "value": "a/b:1.1"},
    ]
    out = apply_patch(obj, ops)
    assert out["spec"]["sources"][0] == obj["spec"]["sources"][0]
    assert out["spec"]["sources"][1]["kustomize"]["images"] == ["a/b:1.1"]


def test_unchanged_edits_are_not_touched() -> None:
    obj = app({"helm": {"parameters": [{"name": "image.name", "value": "a/b"}]}})
    edits = [
        ParamEdit("helm", "image.name", "a/b", changed=False),
        ParamEdit("helm", "image.tag", "1.1", changed=True),
    ]
    ops = json_patch_ops(obj, make_plan(edits))
    assert [op["path"] for op in ops] == [
        "/metadata/resourceVersion",
        "/spec/source/helm/parameters/-",
    ]


def test_no_changes_no_patch() -> None:
    obj = app({"helm": {"parameters": []}})
    plan = AppPlan.build(
        app_name="app",
        app_namespace="ns",
        source_path=("spec", "source"),
        source_type="Helm",
        results=[],
        managed=[ParamEdit("helm", "image.tag", "1.1", changed=True)],
    )
    assert json_patch_ops(obj, plan) == []


def test_missing_source_raises() -> None:
    obj = app({})
    with pytest.raises(PatchError, match="/spec/sources/3"):
        json_patch_ops(
            obj,
            make_plan([ParamEdit("helm", "t", "1", changed=True)], path=("spec", "sources", 3)),
        )


def test_waiting_for_sync_keeps_the_edits_and_drops_the_update() -> None:
    from argocd_image_updater.plan.model import ImageReason, Outcome, ParamEdit

    plan = make_plan(
        [
            ParamEdit("helm", "image.name", "a/b", changed=False),
            ParamEdit("helm", "image.tag", "1.1", changed=True),
        ]
    )
    assert (plan.updated, len(plan.changes)) == (1, 1)
    assert plan.waiting_for_sync({}) is plan
    waiting = plan.waiting_for_sync({"a": "already in branch main"})
    (result,) = waiting.results
    assert (result.outcome, result.reason) == (
        Outcome.WAITING_FOR_SYNC,
        ImageReason.WAITING_FOR_SYNC,
    )
    assert result.message == "already in branch main"
    assert (waiting.updated, waiting.changes, waiting.considered) == (0, (), 1)
    assert waiting.managed == plan.managed  # a file written for other images lists it still
    assert not waiting.has_changes
