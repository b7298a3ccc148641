"""Progress on stderr for work that takes a while (convert, bench cases, demo models, lane runs).

One line, redrawn in place (`\\r` + erase) with the elapsed seconds, shown only when stderr is
a terminal and the command is not printing JSON, and only once the work has run `delay`
seconds (2 by default): short runs print nothing, and pipes, logs and `--json` consumers never
see it (ORT_DML_OPS_PROGRESS_DELAY overrides the delay). The line is erased when the work ends, so what the command prints next starts clean.

    with progress.Progress("convert model.onnx", json=args.json) as p:
        p.step("converting")
        ...
        p.step("blocks.3", done=3, total=10)

A daemon thread redraws the line four times a second, so one long step still shows that it is
alive. Library code reports through `progress.note(text)`: a no-op unless a Progress is active
in this context (contextvars), so a loop deep in convert can say where it is without plumbing.
"""

from __future__ import annotations

import contextvars
import os
import sys
import threading
import time
from typing import TextIO

__all__ = ["Progress", "note"]

_current: contextvars.ContextVar[Progress | None] = contextvars.ContextVar(
    "ort_dml_ops_progress", default=None
)
REDRAW_S = 0.25
MIN_REDRAW_S = 0.05  # a step redraws at once, at most 20 times a second


class Progress:
    def __init__(
        self,
        label: str,
        *,
        json: bool = False,
        stream: TextIO | None = None,
        delay: float | None = None,
        total: int | None = None,
    ) -> None:
        self.label, self.total = label, total
        self.delay = _default_delay() if delay is None else delay
        self.stream = sys.stderr if stream is None else stream
        #: False with --json or when stderr is not a terminal: then nothing is ever written
        self.enabled = not json and _is_tty(self.stream)
        self._text = ""
        self._start = time.monotonic()
        self._shown = False
        self._last_draw = 0.0
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._token: contextvars.Token | None = None

    def step(
        self, what: str, done: int | None = None, total: int | None = None
    ) -> None:
        """Say what is being done now (and, optionally, how far along: done of total)."""
        if total is not None:
            self.total = total
        count = f"[{done}/{self.total}] " if done is not None and self.total else ""
        self._text = f"{count}{what}"
        if (
            self._thread is not None
            and time.monotonic() - self._last_draw >= MIN_REDRAW_S
        ):
            self._draw()  # now, not at the next tick: a step may be the last before the work ends

    def _draw(self) -> None:
        elapsed = time.monotonic() - self._start
        if elapsed < self.delay:
            return
        line = (
            f"{self.label}: {self._text} ({elapsed:.0f} s)"
            if self._text
            else f"{self.label} ({elapsed:.0f} s)"
        )
        with self._lock:
            if self._stop.is_set():
                return
            self.stream.write("\r\x1b[K" + line[: _columns(self.stream) - 1])
            self.stream.flush()
            self._shown, self._last_draw = True, time.monotonic()

    def _run(self) -> None:
        while not self._stop.wait(REDRAW_S):
            self._draw()

    def __enter__(self):
        self._token = _current.set(self)
        if self.enabled:
            self._thread = threading.Thread(
                target=self._run, name="ort-dml-ops-progress", daemon=True
            )
            self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        if self._token is not None:
            _current.reset(self._token)
            self._token = None
        self.close()

    def close(self) -> None:
        """Stop redrawing and erase the line (if it was ever shown)."""
        with self._lock:
            self._stop.set()
            if self._shown:
                self.stream.write("\r\x1b[K")
                self.stream.flush()
                self._shown = False
        if self._thread is not None:
            self._thread.join()
            self._thread = None


def note(what: str, done: int | None = None, total: int | None = None) -> None:
    """Report to the active Progress of this context, if any (library code calls this)."""
    p = _current.get()
    if p is not None:
        p.step(what, done, total)


def _default_delay() -> float:
    """2 s, or ORT_DML_OPS_PROGRESS_DELAY (seconds; tests set 0, a user who wants it sooner too)."""
    try:
        return float(os.environ.get("ORT_DML_OPS_PROGRESS_DELAY", "2"))
    except ValueError:
        return 2.0


def _is_tty(stream) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False


def _columns(stream) -> int:
    try:
        columns = os.get_terminal_size(stream.fileno()).columns
    except (AttributeError, OSError, ValueError):
        columns = 0
    return columns if columns > 0 else 80  # a fresh pty reports 0
