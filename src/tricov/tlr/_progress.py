"""A Rich progress bar for long TLR work, shown only when asked for and on a terminal."""

from __future__ import annotations

import sys
from types import TracebackType
from typing import Any

__all__ = ["Progress"]


class Progress:
    """Context manager: a progress bar of ``total`` steps, or nothing.

    The bar is drawn (on stderr, removed when done) only if ``enabled`` is true and stderr is a
    terminal; otherwise :meth:`advance` does nothing.
    """

    def __init__(self, total: int, description: str, enabled: bool) -> None:
        if not isinstance(enabled, bool):
            raise TypeError(f"progress must be True or False, got {enabled!r}")
        self._bar: Any = None
        self._task: Any = None
        if enabled and total > 0 and sys.stderr.isatty():
            from rich.console import Console
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                TextColumn,
                TimeElapsedColumn,
                TimeRemainingColumn,
            )
            from rich.progress import Progress as RichProgress

            self._bar = RichProgress(TextColumn("{task.description}"), BarColumn(),
                                     MofNCompleteColumn(), TimeElapsedColumn(),
                                     TimeRemainingColumn(), console=Console(stderr=True),
                                     transient=True)
            self._task = self._bar.add_task(description, total=total)

    def __enter__(self) -> Progress:
        if self._bar is not None:
            self._bar.start()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        if self._bar is not None:
            self._bar.stop()

    def advance(self, steps: int = 1) -> None:
        """Mark ``steps`` more steps done."""
        if self._bar is not None:
            self._bar.advance(self._task, steps)
