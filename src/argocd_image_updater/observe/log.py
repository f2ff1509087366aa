"""Logging in the original's shape: logrus-like text (logfmt) or JSON, levels trace…error.

Stdlib ``logging`` does the plumbing; this module adds a ``trace`` level, bound structured fields
(``application``, ``image_name``, …), the two output formats, and a last line of defence against
leaking credentials: every value registered with :func:`register_secret` is masked in every line.
"""

from __future__ import annotations

import json
import logging
import sys
import threading
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any, Final

TRACE: Final = 5
logging.addLevelName(TRACE, "TRACE")

LEVELS: Final[Mapping[str, int]] = {
    "trace": TRACE,
    "debug": logging.DEBUG,
    "info": logging.INFO,
    "warn": logging.WARNING,
    "warning": logging.WARNING,
    "error": logging.ERROR,
}
_LEVEL_NAMES: Final[Mapping[int, str]] = {
    TRACE: "trace",
    logging.DEBUG: "debug",
    logging.INFO: "info",
    logging.WARNING: "warning",
    logging.ERROR: "error",
    logging.CRITICAL: "fatal",
}
ROOT: Final = "argocd_image_updater"
MASK: Final = "*****"

_secrets: set[str] = set()
_secrets_lock = threading.Lock()


def register_secret(value: str) -> None:
    """Mask ``value`` in every log line from now on (ignored when shorter than 4 characters)."""
    if len(value) >= 4:
        with _secrets_lock:
            _secrets.add(value)


def redact(text: str) -> str:
    if not _secrets:
        return text
    with _secrets_lock:
        secrets = sorted(_secrets, key=len, reverse=True)
    for secret in secrets:
        if secret in text:
            text = text.replace(secret, MASK)
    return text


class LogConfigError(ValueError):
    pass


def parse_level(name: str) -> int:
    try:
        return LEVELS[name.strip().lower()]
    except KeyError:
        raise LogConfigError(
            f"invalid log level '{name}': use one of trace, debug, info, warn, error"
        ) from None


def _fields(record: logging.LogRecord) -> dict[str, Any]:
    fields = getattr(record, "fields", None)
    return dict(fields) if isinstance(fields, Mapping) else {}


def _logfmt_value(value: Any) -> str:
    text = value if isinstance(value, str) else str(value)
    if text == "" or any(c in text for c in ' ="\\\n\t') or not text.isprintable():
        return json.dumps(text, ensure_ascii=False)
    return text


def _timestamp(record: logging.LogRecord) -> str:
    return datetime.fromtimestamp(record.created, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class TextFormatter(logging.Formatter):
    """``time="…" level=info msg="…" key=value`` like logrus' TextFormatter."""

    def format(self, record: logging.LogRecord) -> str:
        parts = [
            f'time="{_timestamp(record)}"',
            f"level={_LEVEL_NAMES.get(record.levelno, record.levelname.lower())}",
            f"msg={_logfmt_value(record.getMessage())}",
        ]
        parts.extend(f"{k}={_logfmt_value(v)}" for k, v in sorted(_fields(record).items()))
        if record.exc_info and record.exc_info[1] is not None:
            parts.append(f"error={_logfmt_value(str(record.exc_info[1]))}")
        return redact(" ".join(parts))


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        data: dict[str, Any] = {
            "level": _LEVEL_NAMES.get(record.levelno, record.levelname.lower()),
            "msg": record.getMessage(),
            "time": _timestamp(record),
        }
        for k, v in _fields(record).items():
            data[k] = v if isinstance(v, (int, float, bool)) or v is None else str(v)
        if record.exc_info and record.exc_info[1] is not None:
            data["error"] = str(record.exc_info[1])
        return redact(json.dumps(data, ensure_ascii=False, sort_keys=True))


def setup(level: str = "info", fmt: str = "text", stream: Any = None) -> None:
    """Configure the package's logging; ``fmt`` is ``text`` or ``json``.

    Without ``stream``, records below ``error`` go to stdout and the rest to stderr.
    """
    if fmt not in ("text", "json"):
        raise LogConfigError(f"invalid log format '{fmt}': use text or json")
    formatter = TextFormatter() if fmt == "text" else JsonFormatter()
    handlers: list[logging.Handler] = []
    if stream is not None:
        handlers.append(logging.StreamHandler(stream))
    else:
        # Like the original: errors go to stderr, everything else to stdout.
        out = logging.StreamHandler(sys.stdout)
        out.addFilter(lambda record: record.levelno < logging.ERROR)
        err = logging.StreamHandler(sys.stderr)
        err.setLevel(logging.ERROR)
        handlers += [out, err]
    for handler in handlers:
        handler.setFormatter(formatter)
    root = logging.getLogger(ROOT)
    root.handlers[:] = handlers
    root.setLevel(parse_level(level))
    root.propagate = False


class Logger:
    """A logger with bound structured fields: ``log.bind(application="ns/app").info("…")``."""

    __slots__ = ("_fields", "_logger")

    def __init__(self, logger: logging.Logger, fields: Mapping[str, Any] | None = None) -> None:
        self._logger = logger
        self._fields: Mapping[str, Any] = dict(fields or {})

    def bind(self, **fields: Any) -> Logger:
        return Logger(self._logger, {**self._fields, **fields})

    def is_enabled(self, level: int) -> bool:
        return self._logger.isEnabledFor(level)

    def log(
        self, level: int, msg: str, *args: Any, exc: BaseException | None = None, **fields: Any
    ) -> None:
        if self._logger.isEnabledFor(level):
            merged = {**self._fields, **fields} if fields else self._fields
            exc_info = (type(exc), exc, exc.__traceback__) if exc is not None else None
            self._logger.log(level, msg, *args, extra={"fields": merged}, exc_info=exc_info)

    def trace(self, msg: str, *args: Any, **fields: Any) -> None:
        self.log(TRACE, msg, *args, **fields)

    def debug(self, msg: str, *args: Any, **fields: Any) -> None:
        self.log(logging.DEBUG, msg, *args, **fields)

    def info(self, msg: str, *args: Any, **fields: Any) -> None:
        self.log(logging.INFO, msg, *args, **fields)

    def warning(self, msg: str, *args: Any, **fields: Any) -> None:
        self.log(logging.WARNING, msg, *args, **fields)

    def error(self, msg: str, *args: Any, **fields: Any) -> None:
        self.log(logging.ERROR, msg, *args, **fields)


def get_logger(name: str = ROOT, **fields: Any) -> Logger:
    if not name.startswith(ROOT):
        name = f"{ROOT}.{name}"
    return Logger(logging.getLogger(name), fields)
