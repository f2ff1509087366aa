"""Interning the strings of decoded JSON values that are kept for a long time.

``json.loads`` makes a new string object for every string value it reads. Objects listed from
an API and kept across cycles repeat many of them (namespaces, repository URLs, images, states,
times of one cycle): interned, each distinct string is kept once.
"""

from __future__ import annotations

import sys
from typing import Any


def intern_strings(value: Any) -> None:
    """Replace, in place, the strings held by the dicts and lists of ``value`` (at any depth)
    with interned ones. Keys are left as they are (the JSON decoder already shares the keys of
    one document)."""
    if isinstance(value, dict):
        for key, item in value.items():
            if type(item) is str:
                value[key] = sys.intern(item)
            elif isinstance(item, (dict, list)):
                intern_strings(item)
    elif isinstance(value, list):
        for i, item in enumerate(value):
            if type(item) is str:
                value[i] = sys.intern(item)
            elif isinstance(item, (dict, list)):
                intern_strings(item)
