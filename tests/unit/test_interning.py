"""Decoded JSON values kept for long hold each distinct string once."""

from __future__ import annotations

import json

from argocd_image_updater.kits.interning import intern_strings


def test_equal_strings_at_any_depth_become_one_object_and_values_stay_equal() -> None:
    text = '{"a": "shared-value", "b": ["shared-value", {"c": "shared-value"}], "n": 1}'
    first, second = json.loads(text), json.loads(text)
    assert first["a"] is not second["a"]
    intern_strings(first)
    intern_strings([second])
    assert first == second == json.loads(text)
    assert first["a"] is second["a"] is first["b"][0] is second["b"][1]["c"]
