"""Semantic versions and version constraints with the semantics of Masterminds/semver v3.4.

The original chooses tags with the Go library Masterminds/semver. No Python package implements
its constraint language (``~``, ``^``, ``x`` wildcards, hyphen ranges, ``||``, comma or space
AND, bare ``1.20`` meaning ``1.20.x``) together with its lenient version parsing and its
pre-release rule, so both are written here by hand from the library's documented behaviour:

* Versions are lenient: an optional ``v``, one to three numeric parts (leading zeros are
  accepted and dropped, values must fit 64 bits), an optional pre-release and build metadata
  (``1``, ``v1.2``, ``20240101``, ``1.2.3-rc.1+build.5``). Numeric pre-release identifiers must
  not have leading zeros. ``latest``, ``1.2.3.4`` or ``V1.2`` are not versions.
* Precedence is semver 2.0: build metadata is ignored, a pre-release sorts before its release,
  pre-release identifiers compare numerically when numeric and numeric before alphanumeric.
* A pre-release version satisfies a constraint only when the AND group it is checked against
  contains a comparator with a pre-release (``>=1.3.0-0``, ``2.x-0``); ``*`` excludes them.
"""

from __future__ import annotations

import functools
import operator
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Final

_UINT64_MAX: Final = 2**64 - 1
_IDENT = r"[0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*"
_VERSION_RE: Final = re.compile(
    rf"v?([0-9]+)(?:\.([0-9]+))?(?:\.([0-9]+))?(?:-({_IDENT}))?(?:\+({_IDENT}))?"
)

# One pre-release identifier as a sort key: numeric ones before alphanumeric ones.
_IdentKey = tuple[int, int, str]
# (major, minor, patch, 1 for a release / 0 for a pre-release, pre-release identifiers)
PrecedenceKey = tuple[int, int, int, int, tuple[_IdentKey, ...]]


def _uint64(digits: str) -> int | None:
    """The value of an ASCII digit string when it fits 64 bits (checked before converting)."""
    if len(digits) < 20:  # fast path: below 10**19 < 2**64
        return int(digits)
    significant = digits.lstrip("0")
    if len(significant) > 20:
        return None
    value = int(digits)
    return value if value <= _UINT64_MAX else None


def _ident_key(ident: str) -> _IdentKey:
    if ident.isdigit() and ident.isascii():
        value = _uint64(ident)
        if value is not None:  # larger numbers compare as text, as in the Go library
            return (0, value, "")
    return (1, 0, ident)


def _precedence(major: int, minor: int, patch: int, prerelease: str) -> PrecedenceKey:
    if not prerelease:
        return (major, minor, patch, 1, ())
    return (major, minor, patch, 0, tuple(_ident_key(p) for p in prerelease.split(".")))


_KEY_MATCH: Final = re.compile(
    rf"v?([0-9]+)(?:\.([0-9]+))?(?:\.([0-9]+))?(?:-({_IDENT}))?(?:\+{_IDENT})?"
).fullmatch


@functools.lru_cache(maxsize=65536)
def version_key(text: str) -> PrecedenceKey | None:
    """The precedence of the version ``text`` denotes (``Version.parse(text).precedence``), or
    ``None`` when it is not a version.

    This is what a tag choice needs of each tag: one regular expression and a tuple, no
    :class:`Version` object (parsing 10,000 tags costs about a third of building them).
    """
    match = _KEY_MATCH(text)
    if match is None:
        return None
    major_text, minor_text, patch_text, prerelease = match.groups()
    if len(major_text) < 20 and len(minor_text or "") < 20 and len(patch_text or "") < 20:
        major = int(major_text)
        minor = int(minor_text) if minor_text else 0
        patch = int(patch_text) if patch_text else 0
    else:  # 20 digits or more: may not fit 64 bits
        numbers = [_uint64(part) if part else 0 for part in (major_text, minor_text, patch_text)]
        if None in numbers:
            return None
        major, minor, patch = (n or 0 for n in numbers)
    if prerelease is None:
        return (major, minor, patch, 1, ())
    idents = prerelease.split(".")
    for ident in idents:
        if len(ident) > 1 and ident[0] == "0" and ident.isdigit():
            return None
    return (major, minor, patch, 0, tuple(_ident_key(p) for p in idents))


@dataclass(frozen=True, slots=True, order=False)
class Version:
    """A parsed version. ``<`` orders by precedence, then by the original text (a total order);
    use :func:`compare` for plain precedence (``1.0`` and ``v1.0.0`` are equal there)."""

    major: int
    minor: int
    patch: int
    prerelease: str = ""
    metadata: str = ""
    original: str = ""
    precedence: PrecedenceKey = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        key = _precedence(self.major, self.minor, self.patch, self.prerelease)
        object.__setattr__(self, "precedence", key)

    @classmethod
    def parse(cls, text: str) -> Version | None:
        """The version ``text`` denotes, or ``None`` when it is not a (lenient) semver."""
        if cls is Version:
            # Many applications share a repository's tag list: parse each tag once.
            return _parse_cached(text)
        return cls._parse(text)

    @classmethod
    def _parse(cls, text: str) -> Version | None:
        match = _VERSION_RE.fullmatch(text)
        if match is None:
            return None
        numbers = [_uint64(part) if part else 0 for part in match.group(1, 2, 3)]
        if None in numbers:
            return None
        prerelease = match.group(4) or ""
        for ident in prerelease.split(".") if prerelease else ():
            if len(ident) > 1 and ident[0] == "0" and ident.isdigit():
                return None
        major, minor, patch = (n or 0 for n in numbers)
        return cls(major, minor, patch, prerelease, match.group(5) or "", text)

    @property
    def sort_key(self) -> tuple[PrecedenceKey, str]:
        """Precedence, ties broken by the original text (``1.0`` < ``v1.0``)."""
        return (self.precedence, self.original)

    def __lt__(self, other: object) -> bool:
        if not isinstance(other, Version):
            return NotImplemented
        return self.sort_key < other.sort_key

    def __le__(self, other: object) -> bool:
        if not isinstance(other, Version):
            return NotImplemented
        return self.sort_key <= other.sort_key

    def __gt__(self, other: object) -> bool:
        if not isinstance(other, Version):
            return NotImplemented
        return self.sort_key > other.sort_key

    def __ge__(self, other: object) -> bool:
        if not isinstance(other, Version):
            return NotImplemented
        return self.sort_key >= other.sort_key

    def __str__(self) -> str:
        text = f"{self.major}.{self.minor}.{self.patch}"
        if self.prerelease:
            text += "-" + self.prerelease
        if self.metadata:
            text += "+" + self.metadata
        return text


@functools.lru_cache(maxsize=65536)
def _parse_cached(text: str) -> Version | None:
    return Version._parse(text)


def compare(a: Version, b: Version) -> int:
    """-1, 0 or 1 by semver precedence (build metadata and a ``v`` prefix do not count)."""
    return (a.precedence > b.precedence) - (a.precedence < b.precedence)


class ConstraintError(ValueError):
    """A version constraint that cannot be parsed; the message names it."""


# The constraint grammar. Whitespace is Go's \s; the part pattern deliberately admits '|', 'x',
# 'X' and '*' anywhere (as the Go library does) and rejects odd parts when building the version.
_WS = r"[ \t\n\f\r]"
_OPS = r"=||!=|>|<|>=|=>|<=|=<|~|~>|\^"  # order matters: alternatives are tried left to right
_PART = r"[0-9|xX*]+"
_CV = rf"v?({_PART})(\.{_PART})?(\.{_PART})?(-{_IDENT})?(\+{_IDENT})?"
_CV_PLAIN = rf"v?{_PART}(?:\.{_PART})?(?:\.{_PART})?(?:-{_IDENT})?(?:\+{_IDENT})?"


@functools.cache
def _grammar() -> tuple[re.Pattern[str], re.Pattern[str], re.Pattern[str], re.Pattern[str]]:
    """The item, comparator, range and space patterns, compiled when a constraint other than
    ``*`` is first parsed (a command choosing without a constraint never needs them)."""
    return (
        re.compile(rf"(?:{_OPS}){_WS}*{_CV_PLAIN}"),
        re.compile(rf"({_OPS}){_WS}*({_CV})"),
        re.compile(rf"{_WS}*({_CV_PLAIN}){_WS}+-{_WS}+({_CV_PLAIN}){_WS}*"),
        re.compile(rf"{_WS}*"),
    )


_WILDCARDS: Final = frozenset({"x", "X", "*"})
_OP_ALIASES: Final = {"": "=", "=>": ">=", "=<": "<=", "~>": "~"}
_EXAMPLES: Final = "use e.g. '1.2.x', '~1.2', '^1.0', '>=1.0 <2.0', '1.0 - 1.4' or '*'"


@dataclass(frozen=True, slots=True)
class _Comparator:
    """One ``<op><version>``; ``x``/``*`` or missing parts make it dirty (a range)."""

    op: str
    version: Version
    dirty: bool
    minor_dirty: bool
    patch_dirty: bool
    test: Callable[[PrecedenceKey], bool] = field(init=False, repr=False, compare=False)
    """Whether a version's precedence key is admitted, pre-releases aside: the operator is
    looked up once here, not for each tag."""

    def __post_init__(self) -> None:
        con, op, dirty = self.version.precedence, self.op, self.dirty
        test: Callable[[PrecedenceKey], bool]
        # partial(operator.gt, con)(v) is con > v, i.e. v < con (all in C)
        if op == "=":
            test = self._tilde if dirty else functools.partial(operator.eq, con)
        elif op == "!=":
            test = self._not_equal
        elif op == ">":
            test = self._greater if dirty else functools.partial(operator.lt, con)
        elif op == "<":
            test = functools.partial(operator.gt, con)
        elif op == ">=":
            test = functools.partial(operator.le, con)
        elif op == "<=":
            test = self._less_equal if dirty else functools.partial(operator.ge, con)
        elif op == "~":
            test = self._tilde
        else:
            test = self._caret
        object.__setattr__(self, "test", test)

    def admits(self, v: Version, include_prerelease: bool) -> bool:
        return self.admits_key(v.precedence, include_prerelease)

    def admits_key(self, v: PrecedenceKey, include_prerelease: bool) -> bool:
        """:meth:`admits` on a version's precedence key (``v[3] == 0``: a pre-release)."""
        if not (v[3] or include_prerelease):
            return False
        return self.test(v)

    # In the helpers below, v and con are precedence keys: (major, minor, patch, release, pre).
    def _not_equal(self, v: PrecedenceKey) -> bool:
        con = self.version.precedence
        if self.dirty:
            if v[0] != con[0]:
                return True
            if self.minor_dirty:
                return False
            if v[1] != con[1]:
                return True
            if self.patch_dirty:  # different pre-releases (the key of one is unique)
                return v[3:] != con[3:]
            if v[2] != con[2]:
                return True
        return v != con

    def _greater(self, v: PrecedenceKey) -> bool:
        con = self.version.precedence
        if not self.dirty:
            return v > con
        if v[0] != con[0]:
            return v[0] > con[0]
        if self.minor_dirty:  # >11 needs 12 or higher
            return False
        if self.patch_dirty:  # >11.1 needs 11.2 or higher
            return v[1] > con[1]
        return v > con

    def _less_equal(self, v: PrecedenceKey) -> bool:
        con = self.version.precedence
        if not self.dirty:
            return v <= con
        if v[0] > con[0]:
            return False
        return not (v[0] == con[0] and v[1] > con[1] and not self.minor_dirty)

    def _tilde(self, v: PrecedenceKey) -> bool:
        con = self.version.precedence
        if v < con:
            return False
        if con[:3] == (0, 0, 0) and not (self.minor_dirty or self.patch_dirty):
            return True  # ~0.0.0 and * admit everything
        if v[0] != con[0]:
            return False
        return self.minor_dirty or v[1] == con[1]

    def _caret(self, v: PrecedenceKey) -> bool:
        con = self.version.precedence
        if v < con:
            return False
        if con[0] > 0 or self.minor_dirty:
            return v[0] == con[0]
        if v[0] > 0:
            return False
        if con[1] > 0 or self.patch_dirty:
            return v[1] == con[1]
        if v[1] > 0:
            return False
        return v[2] == con[2]


@dataclass(frozen=True, slots=True)
class Constraint:
    """A parsed constraint: OR of AND groups of comparators."""

    text: str
    groups: tuple[tuple[_Comparator, ...], ...]
    group_has_prerelease: tuple[bool, ...]
    _alternatives: tuple[tuple[tuple[Callable[[PrecedenceKey], bool], ...], bool], ...] = field(
        init=False, repr=False, compare=False
    )

    def __post_init__(self) -> None:
        pairs = tuple(
            (tuple(c.test for c in group), has_pre)
            for group, has_pre in zip(self.groups, self.group_has_prerelease, strict=True)
        )
        object.__setattr__(self, "_alternatives", pairs)

    @classmethod
    def parse(cls, text: str) -> Constraint:
        """Parse ``text`` (``""`` means ``*``); raise :class:`ConstraintError` naming it."""
        return _parse_constraint(text)

    @property
    def admits_every_release(self) -> bool:
        """True for ``*`` (and ``""``), which every release version satisfies."""
        return (self.text if self.text.strip() else "*") == "*"

    @property
    def has_prerelease(self) -> bool:
        """True when some AND group admits pre-release versions."""
        return any(self.group_has_prerelease)

    def check(self, v: Version, include_prerelease: bool = False) -> bool:
        """Whether ``v`` satisfies the constraint (``include_prerelease`` admits pre-releases
        in every group, not only in groups that mention one)."""
        return self.check_key(v.precedence, include_prerelease)

    def check_key(self, v: PrecedenceKey, include_prerelease: bool = False) -> bool:
        """:meth:`check` on a version's precedence key (see :func:`version_key`)."""
        release = v[3]
        for tests, has_pre in self._alternatives:
            # a pre-release is admitted by no comparator of a group without one (groups are
            # never empty)
            if not (release or include_prerelease or has_pre):
                continue
            for test in tests:
                if not test(v):
                    break
            else:
                return True
        return False

    def __str__(self) -> str:
        return self.text


@functools.lru_cache(maxsize=512)
def _parse_constraint(text: str) -> Constraint:
    source = text if text.strip() else "*"
    if source == "*":  # what the grammar makes of it (a test checks), without compiling it
        return Constraint(
            text, ((_comparator(text, "*", "", "*", "*", None, None, None),),), (False,)
        )
    rewritten = _grammar()[2].sub(lambda m: f">= {m.group(1)}, <= {m.group(2)} ", source)
    groups: list[tuple[_Comparator, ...]] = []
    has_pre: list[bool] = []
    for part in rewritten.split("||"):
        comparators = tuple(_parse_comparator(text, item) for item in _split_and(text, part))
        groups.append(comparators)
        has_pre.append(any(c.version.prerelease for c in comparators))
    return Constraint(text, tuple(groups), tuple(has_pre))


def _split_and(text: str, part: str) -> list[str]:
    """The comparators of one AND group, separated by whitespace or a comma.

    Scanning item by item accepts the same strings as the Go library's validation pattern but
    takes linear time on any input.
    """
    if not part.strip():
        raise ConstraintError(
            f"invalid version constraint '{text}': an alternative next to '||' is empty; "
            f"{_EXAMPLES}"
        )
    items: list[str] = []
    pos = _skip_space(part, 0)
    while True:
        match = _grammar()[0].match(part, pos)
        if match is not None:
            items.append(match.group(0))
            end = match.end()
            pos = _skip_space(part, end)
            if pos == len(part):
                return items
            if part[pos] == ",":
                pos = _skip_space(part, pos + 1)
                continue
            if pos > end:
                continue
        hint = ""
        if match is not None and part[pos] in "=!<>~^":
            hint = " (separate comparators with a space or a comma)"
        raise ConstraintError(
            f"invalid version constraint '{text}': improper constraint '{part.strip()}'"
            f"{hint}; {_EXAMPLES}"
        )


def _skip_space(text: str, pos: int) -> int:
    match = _grammar()[3].match(text, pos)
    return match.end() if match else pos


def _parse_comparator(text: str, item: str) -> _Comparator:
    match = _grammar()[1].fullmatch(item)
    if match is None:  # cannot happen: items were matched by the same grammar
        raise ConstraintError(f"invalid version constraint '{text}': '{item}'; {_EXAMPLES}")
    return _comparator(text, item, *match.group(1, 2, 3, 4, 5, 6))


def _comparator(
    text: str,
    item: str,
    op: str,
    whole: str,
    major: str,
    minor: str | None,
    patch: str | None,
    pre: str | None,
) -> _Comparator:
    """The comparator of one item from its parts (the comparator pattern's groups)."""
    pre = pre or ""
    minor_part, patch_part = (minor or "")[1:], (patch or "")[1:]
    dirty = minor_dirty = patch_dirty = False
    version_text = whole
    if major in _WILDCARDS:
        dirty, version_text = True, "0.0.0" + pre
    elif not minor_part or minor_part in _WILDCARDS:
        dirty = minor_dirty = True
        version_text = f"{major}.0.0{pre}"
    elif not patch_part or patch_part in _WILDCARDS:
        dirty = patch_dirty = True
        version_text = f"{major}.{minor_part}.0{pre}"
    version = Version.parse(version_text)
    if version is None:
        raise ConstraintError(
            f"invalid version constraint '{text}': '{item.strip()}' does not name a version; "
            f"{_EXAMPLES}"
        )
    return _Comparator(_OP_ALIASES.get(op, op), version, dirty, minor_dirty, patch_dirty)
