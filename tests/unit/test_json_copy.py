"""The deep copy of JSON documents."""

from __future__ import annotations

import copy
import json

from hypothesis import given, settings
from hypothesis import strategies as st

from argocd_image_updater.kits.json_copy import json_copy

_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda inner: st.lists(inner) | st.dictionaries(st.text(), inner),
    max_leaves=30,
)


@settings(max_examples=60, deadline=None)
@given(_json)
def test_a_copy_equals_its_document_and_shares_no_container(document: object) -> None:
    copied = json_copy(document)
    assert copied == document == copy.deepcopy(document)
    assert json.dumps(copied, sort_keys=True) == json.dumps(document, sort_keys=True)

    def containers(value: object) -> list[int]:
        if isinstance(value, dict):
            return [id(value), *(i for item in value.values() for i in containers(item))]
        if isinstance(value, list):
            return [id(value), *(i for item in value for i in containers(item))]
        return []

    assert not set(containers(copied)) & set(containers(document))


def test_changing_the_copy_leaves_the_document_alone() -> None:
    document = {"conditions": [{"type": "Ready", "status": "True"}], "n": 1}
    copied = json_copy(document)
    copied["conditions"][0]["status"] = "False"
    copied["conditions"].append({})
    assert document == {"conditions": [{"type": "Ready", "status": "True"}], "n": 1}
