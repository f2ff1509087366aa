"""Renders the settings table as Markdown (``python -m argocd_image_updater.config.settings_doc``)."""

from __future__ import annotations

from datetime import timedelta

from argocd_image_updater.config.durations import format_go_duration
from argocd_image_updater.config.settings import OPTIONS


def _default(value: object) -> str:
    if value is None or value == "" or value == ():
        return ""
    if isinstance(value, timedelta):
        return f"`{format_go_duration(value)}`"
    if isinstance(value, bool):
        return str(value).lower()
    return f"`{value}`"


def render() -> str:
    lines = [
        "| Flag | Environment | ConfigMap key | Default | Commands | Meaning |",
        "|---|---|---|---|---|---|",
    ]
    for o in OPTIONS:
        flags = ", ".join(f"`{f}`" for f in (o.flag, *o.aliases))
        env = ", ".join(f"`{e}`" for e in o.env)
        cm = f"`{o.configmap}`" if o.configmap else ""
        commands = ", ".join(sorted(o.commands))
        lines.append(f"| {flags} | {env} | {cm} | {_default(o.default)} | {commands} | {o.help} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    print(render(), end="")
