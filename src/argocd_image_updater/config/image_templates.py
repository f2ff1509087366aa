"""Image fields written as Go templates, expanded per Application.

One ImageUpdater can cover every Application an ApplicationSet generates when the image differs
only by something the Application carries: ``imageName``, ``alias`` and the ``manifestTargets``
keys of an ImageUpdater image, and ``chart`` and ``alias`` of a chart (:class:`RefCharts`), may
hold Go ``text/template`` actions (the engine of ``kits.gotemplate``), e.g.::

    imageName: registry.example.com/shop/{{index .AppLabels "component"}}:~1

The data (``.``) is :class:`AppData`: ``.AppName``, ``.AppNamespace``, ``.AppLabels`` and
``.AppAnnotations``. A template that reads a label or annotation the Application does not have
(``index`` or a field, also inside ``if``/``with``) does not expand: the image is left out of
that Application with the reason ``template: missing label <key>`` (or ``missing annotation``),
never planned with an empty or partial name. A template that fails to execute, or an alias that
expands to a value the alias pattern refuses, is that image's configuration error.

Each template is parsed once (:func:`parse_field`, cached by its text) and checked when the
ImageUpdater is read (:func:`check_template`), so a syntax error names the resource and the
field. A template made only of text and variables (the common case) is expanded by joining its
pieces, without running the template engine. A field without ``{{`` is no template and costs nothing; an ImageUpdater without
templates is selected exactly as before (:meth:`RefImages.for_app` hands back its images as they
are).
"""

from __future__ import annotations

import dataclasses
import functools
import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Final, Generic, TypeVar

from argocd_image_updater.kits.gotemplate import Template, TemplateError
from argocd_image_updater.kits.gotemplate.parser import Action, Field, Function, Literal, Text
from argocd_image_updater.model.application import Application
from argocd_image_updater.model.chart import ChartSpec
from argocd_image_updater.model.update_config import (
    HelmTarget,
    ImageSpec,
    KustomizeTarget,
    ManifestTarget,
    PluginTarget,
    SkippedImage,
)

TEMPLATE_MARK: Final = "{{"
ALIAS_PATTERN: Final = r"^[a-zA-Z0-9][a-zA-Z0-9-._]*$"
_ALIAS_RE: Final = re.compile(ALIAS_PATTERN)
_CACHE_SIZE: Final = 4096


def is_template(text: str | None) -> bool:
    """Whether ``text`` holds a template action (``{{``)."""
    return text is not None and TEMPLATE_MARK in text


@functools.lru_cache(maxsize=_CACHE_SIZE)
def parse_field(text: str, name: str) -> Template:
    """The parsed template of a field (``name`` is the field's key, shown in errors); raise
    :class:`TemplateError`. Parsed once per text and name, however many Applications use it."""
    return Template.parse(text, name)


Part = str | tuple[str, str]
"""A piece of a simple template: literal text, or ``(variable, key)`` (see :func:`_simple`)."""
_FIELDS: Final = {"AppName": "name", "AppNamespace": "namespace"}
_MAPS: Final = {"AppLabels": "label", "AppAnnotations": "annotation"}


def _simple_action(node: Action) -> Part | None:
    pipe = node.pipe
    if pipe.decl or pipe.is_assign or len(pipe.cmds) != 1:
        return None
    args = pipe.cmds[0].args
    if len(args) == 1 and isinstance(args[0], Field):
        names = args[0].names
        if len(names) == 1 and names[0] in _FIELDS:
            return (_FIELDS[names[0]], "")
        if len(names) == 2 and names[0] in _MAPS:
            return (_MAPS[names[0]], names[1])
        return None
    if (
        len(args) == 3
        and isinstance(args[0], Function)
        and args[0].name == "index"
        and isinstance(args[1], Field)
        and len(args[1].names) == 1
        and args[1].names[0] in _MAPS
        and isinstance(args[2], Literal)
        and isinstance(args[2].value, str)
    ):
        return (_MAPS[args[1].names[0]], args[2].value)
    return None


@functools.lru_cache(maxsize=_CACHE_SIZE)
def _simple(text: str, name: str) -> tuple[Part, ...] | None:
    """The pieces of a template made only of text and variables (``{{.AppName}}``,
    ``{{index .AppLabels "k"}}``, ``{{.AppLabels.k}}``): expanded without running the template
    engine, with the same result. ``None`` for any other template."""
    parts: list[Part] = []
    for node in parse_field(text, name).nodes:
        if isinstance(node, Text):
            parts.append(node.text)
            continue
        part = _simple_action(node) if isinstance(node, Action) else None
        if part is None:
            return None
        parts.append(part)
    return tuple(parts)


def check_template(text: str, name: str) -> str:
    """``text`` when it parses (or holds no template); raise :class:`TemplateError`."""
    if is_template(text):
        parse_field(text, name)
    return text


class MissingKey(Exception):
    """A template read a label or annotation the Application does not have."""

    def __init__(self, kind: str, key: str) -> None:
        super().__init__(f"missing {kind} {key}")
        self.kind = kind
        self.key = key
        self.field = ""
        """The key of the field whose template read it, e.g. ``imageName``."""


class _Watched(Mapping[str, str]):
    """Labels or annotations that remember the first key a template asked for in vain."""

    __slots__ = ("_context", "_kind", "_values")

    def __init__(self, values: Mapping[str, str], kind: str, context: AppContext) -> None:
        self._values = values
        self._kind = kind
        self._context = context

    def _miss(self, key: object) -> None:
        if self._context.missing is None:
            self._context.missing = MissingKey(self._kind, str(key))

    def __getitem__(self, key: str) -> str:
        try:
            return self._values[key]
        except KeyError:
            self._miss(key)
            raise

    def __contains__(self, key: object) -> bool:
        present = key in self._values
        if not present:
            self._miss(key)
        return present

    def __iter__(self) -> Iterator[str]:
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)


@dataclass(frozen=True, slots=True)
class AppData:
    """The data of an image template: one Application (a Go struct: an unknown field is an
    execution error)."""

    AppName: str
    AppNamespace: str
    AppLabels: Mapping[str, str]
    AppAnnotations: Mapping[str, str]


class AppContext:
    """Expands templates for one Application."""

    __slots__ = ("_data", "app", "missing")

    def __init__(self, app: Application) -> None:
        self.app = app
        self.missing: MissingKey | None = None
        self._data: AppData | None = None

    @property
    def data(self) -> AppData:
        """The template data (built when a template needs the engine)."""
        if self._data is None:
            app = self.app
            self._data = AppData(
                AppName=app.name,
                AppNamespace=app.namespace,
                AppLabels=_Watched(app.labels, "label", self),
                AppAnnotations=_Watched(app.annotations, "annotation", self),
            )
        return self._data

    def expand(self, text: str, name: str) -> str:
        """``text`` expanded; raise :class:`MissingKey` or :class:`TemplateError`."""
        if not is_template(text):
            return text
        parts = _simple(text, name)
        if parts is not None:
            return self._join(parts, name)
        template = parse_field(text, name)
        self.missing = None
        rendered = template.render(self.data)
        if self.missing is not None:
            self.missing.field = name
            raise self.missing
        return rendered

    def _join(self, parts: tuple[Part, ...], name: str) -> str:
        out: list[str] = []
        app = self.app
        for part in parts:
            if isinstance(part, str):
                out.append(part)
                continue
            kind, key = part
            if kind == "name":
                out.append(app.name)
            elif kind == "namespace":
                out.append(app.namespace)
            else:
                values = app.labels if kind == "label" else app.annotations
                value = values.get(key)
                if value is None:
                    missing = MissingKey(kind, key)
                    missing.field = name
                    raise missing
                out.append(value)
        return "".join(out)


def spec_has_template(spec: ImageSpec) -> bool:
    """Whether any templatable field of ``spec`` holds a template."""
    target = spec.target
    texts: list[str | None] = [spec.alias, spec.image]
    if target is not None:
        if target.helm is not None:
            texts += [target.helm.name, target.helm.tag, target.helm.spec]
        if target.kustomize is not None:
            texts.append(target.kustomize.name)
        if target.plugin is not None:
            texts += [target.plugin.name, target.plugin.tag, target.plugin.spec]
    return any(is_template(text) for text in texts)


TargetTexts = tuple[str | None, ...]
"""The expanded keys of a manifest target: Helm name, tag, spec; Kustomize name; plugin name,
tag, spec (``None`` for a key that is not set)."""


def _expand_target(target: ManifestTarget | None, ctx: AppContext) -> TargetTexts:
    """The expanded target keys; a key's template error is that key's error (``_FieldError``)."""
    if target is None:
        return ()

    def key(text: str | None, name: str) -> str | None:
        return None if text is None else _expand_field(ctx, text, name)

    helm, kustomize, plugin = target.helm, target.kustomize, target.plugin
    out: list[str | None] = [None] * 7
    if helm is not None:
        out[0] = key(helm.name, "manifestTargets.helm.name")
        out[1] = key(helm.tag, "manifestTargets.helm.tag")
        out[2] = key(helm.spec, "manifestTargets.helm.spec")
    if kustomize is not None:
        out[3] = key(kustomize.name, "manifestTargets.kustomize.name")
    if plugin is not None:
        out[4] = key(plugin.name, "manifestTargets.plugin.name")
        out[5] = key(plugin.tag, "manifestTargets.plugin.tag")
        out[6] = key(plugin.spec, "manifestTargets.plugin.spec")
    return tuple(out)


def _build_target(target: ManifestTarget | None, texts: TargetTexts) -> ManifestTarget | None:
    if target is None:
        return None
    return ManifestTarget(
        helm=HelmTarget(texts[0], texts[1], texts[2]) if target.helm is not None else None,
        kustomize=KustomizeTarget(texts[3] or "") if target.kustomize is not None else None,
        plugin=PluginTarget(texts[4], texts[5], texts[6]) if target.plugin is not None else None,
    )


class _FieldError(Exception):
    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field


def _expand_field(ctx: AppContext, text: str, name: str) -> str:
    try:
        return ctx.expand(text, name)
    except TemplateError as err:
        raise _FieldError(name, str(err)) from None


def chart_has_template(spec: ChartSpec) -> bool:
    """Whether the alias or the reference of a chart holds a template."""
    return is_template(spec.alias) or is_template(spec.chart)


Entry = TypeVar("Entry", ImageSpec, ChartSpec)

Expanded = tuple[str, str, TargetTexts]
"""What the templates of an entry expand to for one Application: alias, reference (image or
chart) and, for an image, its target keys."""


@dataclass(frozen=True, slots=True)
class _Kind(Generic[Entry]):
    """What differs between templated images and templated charts."""

    reference: str
    """The field holding the reference: ``imageName`` or ``chart``."""
    noun: str
    """What the reference is, in messages."""
    others: str
    """Whose aliases an expanded alias must differ from, in messages."""
    reference_of: Callable[[Entry], str]
    has_template: Callable[[Entry], bool]
    expand_rest: Callable[[Entry, AppContext], TargetTexts]
    build: Callable[[Entry, Expanded], Entry]


_IMAGES: Final[_Kind[ImageSpec]] = _Kind(
    reference="imageName",
    noun="image name",
    others="another image",
    reference_of=lambda spec: spec.image,
    has_template=spec_has_template,
    expand_rest=lambda spec, ctx: _expand_target(spec.target, ctx),
    build=lambda spec, values: dataclasses.replace(
        spec, alias=values[0], image=values[1], target=_build_target(spec.target, values[2])
    ),
)
_CHARTS: Final[_Kind[ChartSpec]] = _Kind(
    reference="chart",
    noun="chart reference",
    others="another image or chart",
    reference_of=lambda spec: spec.chart,
    has_template=chart_has_template,
    expand_rest=lambda spec, ctx: (),
    build=lambda spec, values: dataclasses.replace(spec, alias=values[0], chart=values[1]),
)


def _expand_values(kind: _Kind[Entry], spec: Entry, ctx: AppContext) -> Expanded | SkippedImage:
    reference = kind.reference_of(spec)
    try:
        expanded = _expand_field(ctx, reference, kind.reference)
        if not expanded.strip():
            raise _FieldError(kind.reference, f"the template expands to an empty {kind.noun}")
        alias = _expand_field(ctx, spec.alias, "alias")
        if alias != spec.alias and not _ALIAS_RE.match(alias):
            raise _FieldError(
                "alias",
                f"the template expands to {alias!r}, which does not match {ALIAS_PATTERN}",
            )
        rest = kind.expand_rest(spec, ctx)
    except MissingKey as missing:
        return SkippedImage(
            alias=spec.alias,
            image=reference,
            message=f"template: {missing} ({spec.where(missing.field)})",
            detail=f"{missing.kind} {missing.key}",
        )
    except _FieldError as err:
        return SkippedImage(
            alias=spec.alias,
            image=reference,
            message=f"{spec.where(err.field)}: {err}",
            error=True,
        )
    return alias, expanded, rest


def _expand(kind: _Kind[Entry], spec: Entry, ctx: AppContext) -> Entry | SkippedImage:
    values = _expand_values(kind, spec, ctx)
    return values if isinstance(values, SkippedImage) else kind.build(spec, values)


def expand_spec(spec: ImageSpec, ctx: AppContext) -> ImageSpec | SkippedImage:
    """``spec`` with its templates expanded for the Application of ``ctx``, or why it is left
    out: a missing label or annotation (skipped), a template that fails to execute or an alias
    the alias pattern refuses (an error naming the field)."""
    return _expand(_IMAGES, spec, ctx)


def expand_chart(spec: ChartSpec, ctx: AppContext) -> ChartSpec | SkippedImage:
    """``spec`` with its templates expanded for the Application of ``ctx``, or why it is left
    out (as :func:`expand_spec`)."""
    return _expand(_CHARTS, spec, ctx)


class _RefEntries(Generic[Entry]):
    """The images or charts of one applicationRef, ready to be expanded for each Application
    it selects."""

    __slots__ = ("_built", "_kind", "_templated", "specs")

    def __init__(self, kind: _Kind[Entry], specs: Sequence[Entry]) -> None:
        self._kind: _Kind[Entry] = kind
        self.specs: tuple[Entry, ...] = tuple(specs)
        self._templated = tuple(kind.has_template(spec) for spec in self.specs)
        self._built: list[dict[Expanded, Entry]] = [{} for _ in self.specs]
        """Per entry, the values built so far by what their templates expanded to: the
        Applications of one component share one value."""

    def _expand(self, position: int, ctx: AppContext) -> Entry | SkippedImage:
        spec = self.specs[position]
        values = _expand_values(self._kind, spec, ctx)
        if isinstance(values, SkippedImage):
            return values
        built = self._built[position]
        found = built.get(values)
        if found is None:
            found = built[values] = self._kind.build(spec, values)
        return found

    def for_app(
        self, app: Application, taken: Iterable[str] = ()
    ) -> tuple[tuple[Entry, ...], tuple[SkippedImage, ...]]:
        """The entries of ``app`` (templates expanded) and those left out, with why;
        ``taken`` are aliases the app already uses (an expanded alias must differ)."""
        if not any(self._templated):
            return self.specs, ()
        ctx = AppContext(app)
        entries: list[Entry] = []
        skipped: list[SkippedImage] = []
        seen = set(taken)
        for position, (spec, templated) in enumerate(zip(self.specs, self._templated, strict=True)):
            expanded = self._expand(position, ctx) if templated else spec
            if not isinstance(expanded, SkippedImage) and expanded.alias in seen:
                expanded = SkippedImage(
                    alias=spec.alias,
                    image=self._kind.reference_of(spec),
                    message=(
                        f"{spec.where('alias')}: the template expands to '{expanded.alias}', "
                        f"the alias of {self._kind.others} of this Application"
                    ),
                    error=True,
                )
            if isinstance(expanded, SkippedImage):
                skipped.append(expanded)
                continue
            seen.add(expanded.alias)
            entries.append(expanded)
        return tuple(entries), tuple(skipped)


class RefImages(_RefEntries[ImageSpec]):
    """The images of one applicationRef, ready to be expanded for each Application it selects."""

    __slots__ = ()

    def __init__(self, specs: Sequence[ImageSpec]) -> None:
        super().__init__(_IMAGES, specs)


class RefCharts(_RefEntries[ChartSpec]):
    """The charts of one applicationRef, ready to be expanded for each Application."""

    __slots__ = ()

    def __init__(self, specs: Sequence[ChartSpec]) -> None:
        super().__init__(_CHARTS, specs)
