"""Go's ``fmt.Sprintf``: the format string read exactly as ``fmt/print.go`` ``doPrintf`` reads it.

Flags ``# 0 + -`` and space, a width and a precision as digits or ``*`` (from an int argument),
explicit argument indexes ``%[n]d``, and Go's error texts: ``%!(BADWIDTH)`` and ``%!(BADPREC)``
when a ``*`` argument is not an int or its magnitude passes one million (Go's ``tooLarge``; the
verb is then formatted without it), ``%!(NOVERB)`` when the format ends early, which is also
where a digit width or precision past one million leaves it (Go's ``parsenum`` gives up and
skips the rest of the format), ``%!d(BADINDEX)``, ``%!d(MISSING)``, ``%!(EXTRA …)``. Verbs are
formatted by :func:`.formatting.format_value`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from argocd_image_updater.kits.gotemplate.errors import TextTooLong
from argocd_image_updater.kits.gotemplate.formatting import Spec, format_v, format_value, type_name
from argocd_image_updater.kits.gotemplate.limits import MAX_FMT_NUMBER

_FLAGS = "#0+- "
_INT64 = 1 << 63


def too_large(x: int) -> bool:
    """Go's ``tooLarge``: a width or precision beyond ±1e6."""
    return x > MAX_FMT_NUMBER or x < -MAX_FMT_NUMBER


def parsenum(text: str, start: int, end: int) -> tuple[int, bool, int]:
    """Go's ``parsenum``: ``(number, found, next index)`` of the ASCII digits at ``start``; past
    ±1e6 it gives up and returns ``end`` as the next index."""
    if start >= end:
        return 0, False, end
    num, found, i = 0, False, start
    while i < end and "0" <= text[i] <= "9":
        if too_large(num):
            return 0, False, end
        num = num * 10 + ord(text[i]) - 48
        found = True
        i += 1
    return num, found, i


def _int_from_arg(args: Sequence[Any], argnum: int) -> tuple[int, bool, int]:
    """Go's ``intFromArg``: ``(number, is int, next argument)``."""
    if argnum >= len(args):
        return 0, False, argnum
    arg = args[argnum]
    if isinstance(arg, bool) or not isinstance(arg, int) or not -_INT64 <= arg < _INT64:
        return 0, False, argnum + 1
    if too_large(arg):
        return 0, False, argnum + 1
    return arg, True, argnum + 1


def _parse_arg_number(text: str, i: int) -> tuple[int, int, bool]:
    """Go's ``parseArgNumber`` of ``text[i:]`` (it starts with ``[``): ``(index, characters
    consumed, ok)``."""
    if len(text) - i < 3:
        return 0, 1, False
    close = text.find("]", i + 1)
    if close < 0:
        return 0, 1, False
    num, ok, newi = parsenum(text, i + 1, close)
    if not ok or newi != close:
        return 0, close - i + 1, False
    return num - 1, close - i + 1, True


class _Printer:
    """The state of one ``Sprintf``: the output, its size bound and the argument bookkeeping."""

    def __init__(self, fmt: str, args: Sequence[Any], limit: int | None) -> None:
        self.fmt = fmt
        self.args = args
        self.limit = limit
        self.out: list[str] = []
        self.size = 0
        self.reordered = False
        self.good_arg_num = True

    def write(self, text: str) -> None:
        self.size += len(text)
        if self.limit is not None and self.size > self.limit:
            raise TextTooLong()
        self.out.append(text)

    def arg_number(self, argnum: int, i: int) -> tuple[int, int, bool]:
        """Go's ``argNumber``: ``(argument, next index, found)`` for an optional ``[n]``."""
        if i >= len(self.fmt) or self.fmt[i] != "[":
            return argnum, i, False
        self.reordered = True
        index, width, ok = _parse_arg_number(self.fmt, i)
        if ok and 0 <= index < len(self.args):
            return index, i + width, True
        self.good_arg_num = False
        return argnum, i + width, ok

    def run(self) -> str:
        fmt, args, end = self.fmt, self.args, len(self.fmt)
        argnum, i = 0, 0
        while i < end:
            self.good_arg_num = True
            j = fmt.find("%", i)
            if j < 0:
                self.write(fmt[i:])
                break
            if j > i:
                self.write(fmt[i:j])
            i = j + 1
            flags: set[str] = set()
            while i < end and fmt[i] in _FLAGS:
                flags.add(fmt[i])
                i += 1
            argnum, i, after_index = self.arg_number(argnum, i)
            width: int | None = None
            if i < end and fmt[i] == "*":
                i += 1
                num, present, argnum = _int_from_arg(args, argnum)
                if not present:
                    self.write("%!(BADWIDTH)")
                elif num < 0:
                    num = -num
                    flags.add("-")
                    flags.discard("0")
                width = num if present else None
                after_index = False
            else:
                num, present, i = parsenum(fmt, i, end)
                width = num if present else None
                if after_index and present:  # "%[3]2d"
                    self.good_arg_num = False
            prec: int | None = None
            if i + 1 < end and fmt[i] == ".":
                i += 1
                if after_index:  # "%[3].2d"
                    self.good_arg_num = False
                argnum, i, after_index = self.arg_number(argnum, i)
                if i < end and fmt[i] == "*":
                    i += 1
                    num, present, argnum = _int_from_arg(args, argnum)
                    if num < 0:  # a negative precision makes no sense
                        present = False
                    if not present:
                        self.write("%!(BADPREC)")
                    prec = num if present else None
                    after_index = False
                else:
                    num, present, i = parsenum(fmt, i, end)
                    prec = num if present else 0
            if not after_index:
                argnum, i, after_index = self.arg_number(argnum, i)
            if i >= end:
                self.write("%!(NOVERB)")
                break
            verb = fmt[i]
            i += 1
            if verb == "%":  # takes no argument and ignores width and precision
                self.write("%")
            elif not self.good_arg_num:
                self.write(f"%!{verb}(BADINDEX)")
            elif argnum >= len(args):
                self.write(f"%!{verb}(MISSING)")
            else:
                if verb == "v":
                    # "%+v" names struct fields instead of forcing a sign; "%#v" is not modelled.
                    if "+" in flags:
                        flags.add("V")
                    flags -= {"+", "#"}
                room = None if self.limit is None else self.limit - self.size
                spec = Spec(verb, frozenset(flags), prec, width, room)
                self.write(format_value(args[argnum], spec))
                argnum += 1
        if not self.reordered and argnum < len(args):
            extra = ", ".join(
                "<nil>" if a is None else f"{type_name(a)}={format_v(a)}" for a in args[argnum:]
            )
            self.write(f"%!(EXTRA {extra})")
        return "".join(self.out)


def sprintf(fmt: str, args: Sequence[Any], limit: int | None = None) -> str:
    """Go's ``fmt.Sprintf``; :class:`TextTooLong` once the text passes ``limit`` characters."""
    return _Printer(fmt, args, limit).run()
