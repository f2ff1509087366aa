"""Byte-exact edits of YAML text: every byte outside the changed values is kept.

ruamel.yaml's parser only locates nodes (its events carry exact offsets); new text is spliced
into the original, and every edit is verified by parsing the result again.

Modules: :mod:`.paths` (paths and their dotted text), :mod:`.tree` (the node tree with offsets),
:mod:`.quick` (the same tree for simple block YAML, read without the full parser),
:mod:`.lookup` (finding a path), :mod:`.scalars` (writing a string as a scalar), :mod:`.layout`
(the file's line and indentation conventions), :mod:`.render` (JSON values as YAML lines),
:mod:`.edit` (set and get scalar values), :mod:`.jsonpatch` (JSON pointers and patches on plain
data) and :mod:`.patch` (a JSON patch applied to the text). The package depends on nothing of
the product.
"""

from argocd_image_updater.kits.yamltext.edit import (
    get_dotted_value,
    get_value,
    resolve_path,
    set_value,
    set_values,
)
from argocd_image_updater.kits.yamltext.errors import YamlEditError, YamlPatchError
from argocd_image_updater.kits.yamltext.patch import apply_patch
from argocd_image_updater.kits.yamltext.paths import PathElem, format_path, parse_dot_path
from argocd_image_updater.kits.yamltext.scalars import is_safe_plain

__all__ = [
    "PathElem",
    "YamlEditError",
    "YamlPatchError",
    "apply_patch",
    "format_path",
    "get_dotted_value",
    "get_value",
    "is_safe_plain",
    "parse_dot_path",
    "resolve_path",
    "set_value",
    "set_values",
]
