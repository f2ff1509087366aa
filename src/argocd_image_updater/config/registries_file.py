"""Reading the ``registries.conf`` file, without the parser's imports until there is a file.

``test`` and local mode run without a registries.conf more often than with one: the YAML parser,
the pydantic model of an entry and the certificate checks
(:mod:`argocd_image_updater.config.registries_conf`) are imported only when a file is read.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Final

from argocd_image_updater.config.registries import (
    DEFAULT_TLS_DIR,
    RegistriesConfError,
    RegistryConfig,
)
from argocd_image_updater.observe.log import get_logger

DEFAULT_PATH: Final = "/app/config/registries.conf"

_log = get_logger("argocd_image_updater.config.registries_conf")


@dataclass(frozen=True, slots=True)
class RegistriesConfLoad:
    """What :func:`load_registries_conf` found: the config and whether the file was missing."""

    config: RegistryConfig
    path: str
    missing: bool = False
    reason: str = ""
    """Why the file was not read when ``missing`` (e.g. ``no such file or directory``)."""


def load_registries_conf(
    path: str | Path = DEFAULT_PATH,
    *,
    missing_ok: bool = False,
    tls_dir: str | Path = DEFAULT_TLS_DIR,
) -> RegistriesConfLoad:
    """Read and parse the registries.conf at ``path``.

    With ``missing_ok``, a missing file or a directory is not an error: the result holds the
    default configuration (built-in Docker Hub only), ``missing=True`` and the reason, and a
    warning is logged. Any other problem raises :class:`RegistriesConfError`.
    """
    source = str(path)
    reason = ""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        reason = "no such file or directory"
    except IsADirectoryError:
        reason = "is a directory"
    except PermissionError:
        raise RegistriesConfError(
            [f"{source}: permission denied; make the file readable by the updater"]
        ) from None
    except UnicodeDecodeError:
        raise RegistriesConfError([f"{source}: not a UTF-8 text file"]) from None
    except OSError as exc:
        raise RegistriesConfError([f"{source}: cannot be read: {exc.strerror or exc}"]) from None
    if reason:
        if not missing_ok:
            raise RegistriesConfError(
                [f"{source}: {reason}; create the file or point the path to it"]
            )
        _log.warning(
            "registries configuration %s not used (%s); using the default registries",
            source,
            reason,
        )
        return RegistriesConfLoad(RegistryConfig(), source, missing=True, reason=reason)
    from argocd_image_updater.config.registries_conf import parse_registries_conf

    return RegistriesConfLoad(parse_registries_conf(text, source, tls_dir=tls_dir), source)
