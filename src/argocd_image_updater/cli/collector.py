"""The garbage collector during the console script's start-up.

Importing a command creates some 100,000 objects (modules, classes, functions, dataclass
methods, compiled regular expressions) that live as long as the process. The collector would
walk them again and again while they are being created (some 60 collections for ``test``,
about a tenth of its start-up time) and find nothing to free. So the console script pauses it
while it imports, and when the command's modules are in, moves everything created so far into
the collector's permanent generation (:func:`gc.freeze`) and resumes it: the command's own work
is collected as usual, and a controller's later collections no longer walk the imported code.

Only the console script pauses the collector (:mod:`~argocd_image_updater.cli.console`, before
click is imported, and :func:`argocd_image_updater.cli.main.main`); a program that calls the
command line in its own process (tests) keeps its collector as it is.
"""

from __future__ import annotations

import gc

_paused = False


def pause() -> None:
    """Stop collecting until :func:`resume` (the console script, before it imports a command)."""
    global _paused
    if gc.isenabled():
        gc.disable()
        _paused = True


def resume() -> None:
    """Freeze what exists now and collect again, if :func:`pause` stopped the collector."""
    global _paused
    if _paused:
        _paused = False
        gc.freeze()
        gc.enable()
