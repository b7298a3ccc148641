"""The one write path for every file ort-dml-ops creates (model, external data, report, .npy, .html, .png).

`Outputs` is used in three steps, so that a mistake leaves nothing behind:

1. `protect(path)` every file the command reads (the input model, its external-data files,
   `--input` arrays) and `add(path, what)` every file it will write. `add` refuses, in one
   line, a target that is a folder, sits in a folder that does not exist, or is the same file
   as a protected one or another target — compared after resolving symlinks and `..`
   (`os.path.realpath`) and by inode (hard links).
2. `with outputs:` creates an empty temporary file beside every target (`.NAME.XXXX.tmp`, in
   the target's own folder, so the final rename is atomic). A target that cannot be created
   (read-only folder, full disk) fails here, before anything is written; SIGTERM and SIGINT
   are turned into `Interrupted` while the block runs, so the temporaries are removed on every
   exit path and the CLI exits 128+signum.
3. Write into `outputs.temp(path)`, then `outputs.commit()`: every temporary gets the mode a
   plain `open()` would give (0666 & ~umask; mkstemp makes 0600) and is renamed over its target.
   Leaving the block without `commit()` removes every temporary.
"""

from __future__ import annotations

import contextlib
import os
import signal
import tempfile
import threading
from pathlib import Path

from .errors import UserError


class Interrupted(BaseException):
    """SIGTERM/SIGINT arrived while outputs were being written (temporaries already removed)."""

    def __init__(self, signum: int):
        super().__init__(f"interrupted by {signal.Signals(signum).name}")
        self.signum = signum


def _identity(path: Path):
    """(device, inode) of an existing file, following symlinks; else the resolved path."""
    try:
        st = os.stat(path)
    except OSError:
        return ("path", os.path.realpath(path))
    return (st.st_dev, st.st_ino)


def current_umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


class Outputs:
    def __init__(self) -> None:
        self._protected: dict = {}  # identity -> what it is
        self._targets: dict[Path, str] = {}  # target -> what it is
        self._temps: dict[Path, str] = {}
        self._old_handlers: dict = {}
        self._in_critical = False
        self._pending: int | None = None

    # ---------------------------------------------------------------- step 1: declare
    def protect(self, path: str | os.PathLike, what: str = "an input") -> None:
        """A file the command reads: no target may be it, or a link to it."""
        path = Path(path)
        self._protected[_identity(path)] = f"{what} ({path})"
        self._protected[("path", os.path.realpath(path))] = f"{what} ({path})"
        for target, twhat in self._targets.items():
            self._refuse_protected(target, twhat)

    def add(self, path: str | os.PathLike, what: str = "output") -> Path:
        """A file to write; refused (UserError, one line) before anything is written."""
        path = Path(path)
        if not str(path) or path.name in ("", ".", ".."):
            raise UserError(f"{path}: the {what} path needs a file name")
        folder = path.parent
        if not folder.is_dir():
            if folder.exists() or any(
                p.exists() and not p.is_dir() for p in folder.parents
            ):
                raise UserError(
                    f"{folder}: not a folder (a file is in the {what} path)"
                )
            raise UserError(f"{folder}: the {what} folder does not exist")
        if path.is_dir():
            raise UserError(
                f"{path}: cannot write the {what} (the path is a directory; give a file name)"
            )
        self._refuse_protected(path, what)
        ident = _identity(path)
        real = os.path.realpath(path)
        for other, owhat in self._targets.items():
            if _identity(other) == ident or os.path.realpath(other) == real:
                raise UserError(
                    f"{path}: the {what} path and the {owhat} path are the same file; choose another"
                )
        self._targets[path] = what
        return path

    def _refuse_protected(self, path: Path, what: str) -> None:
        hit = self._protected.get(_identity(path)) or self._protected.get(
            ("path", os.path.realpath(path))
        )
        if hit:
            raise UserError(
                f"{path}: the {what} path is {hit}; writing it would overwrite the input, choose another path"
            )

    # ---------------------------------------------------------------- step 2: temporaries
    def __enter__(self):
        try:
            self._install_handlers()
            # a signal between mkstemp and the bookkeeping would leak a file: held until done
            with self._critical():
                self._make_temps()
        except BaseException:
            self._cleanup()
            raise
        return self

    def _make_temps(self) -> None:
        for target, what in self._targets.items():
            try:
                fd, tmp = tempfile.mkstemp(
                    prefix=f".{target.name[:200]}.", suffix=".tmp", dir=target.parent
                )
            except OSError as exc:
                raise UserError(
                    f"{target}: cannot write the {what} ({_reason(exc)})"
                ) from None
            os.close(fd)
            self._temps[target] = tmp

    def __exit__(self, *exc) -> None:
        self._cleanup()

    def temp(self, target: str | os.PathLike) -> str:
        """The temporary file to write `target`'s content into."""
        return self._temps[Path(target)]

    def discard(self, target: str | os.PathLike) -> None:
        """Do not write `target` after all (its temporary is removed)."""
        tmp = self._temps.pop(Path(target), None)
        if tmp:
            _remove(tmp)

    # ---------------------------------------------------------------- step 3: commit
    def commit(self) -> None:
        """Give every temporary the umask's mode and rename it over its target, in `add` order."""
        mode = 0o666 & ~current_umask()
        # a signal here is held until every rename is done (then reported): never half a commit
        with self._critical():
            try:
                for tmp in self._temps.values():
                    os.chmod(tmp, mode)
                for target in list(self._temps):
                    os.replace(self._temps[target], target)
                    del self._temps[target]
            except OSError as exc:
                raise UserError(f"cannot write the outputs ({_reason(exc)})") from None

    def _cleanup(self) -> None:
        self._in_critical = (
            True  # a second signal must not interrupt the clean-up itself
        )
        for tmp in self._temps.values():
            _remove(tmp)
        self._temps.clear()
        self._restore_handlers()
        self._in_critical = False
        pending, self._pending = self._pending, None
        if (
            pending is not None
        ):  # arrived during the clean-up: hand it to the restored handler
            signal.raise_signal(pending)

    @contextlib.contextmanager
    def _critical(self):
        """Signals arriving inside are held and raised (as Interrupted) when it ends."""
        self._in_critical = True
        try:
            yield
        finally:
            self._in_critical = False
        pending, self._pending = self._pending, None
        if pending is not None:
            raise Interrupted(pending)

    # ---------------------------------------------------------------- signals
    def _install_handlers(self) -> None:
        if threading.current_thread() is not threading.main_thread():
            return  # only the main thread may set handlers; callers in threads get plain cleanup

        def handler(signum, frame):
            if self._in_critical:
                self._pending = signum
                return
            raise Interrupted(signum)

        for sig in (signal.SIGTERM, signal.SIGINT):
            self._old_handlers[sig] = signal.signal(sig, handler)

    def _restore_handlers(self) -> None:
        for sig, old in self._old_handlers.items():
            signal.signal(sig, old)
        self._old_handlers.clear()


def write_text(tmp: str, target: Path, text: str, what: str = "report") -> None:
    """`text` into the temporary file `tmp` (to be renamed to `target` by Outputs.commit)."""
    try:
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(text)
    except OSError as exc:
        raise write_error(target, what, exc) from None


def write_error(target, what: str, exc: OSError) -> UserError:
    """The one-line error for a failed write of `target`."""
    return UserError(f"{target}: cannot write the {what} ({_reason(exc)})")


def _reason(exc: OSError) -> str:
    if isinstance(exc, PermissionError):  # EACCES, and EPERM (an immutable folder)
        return "permission denied"
    return (exc.strerror or str(exc)).lower() if isinstance(exc, OSError) else str(exc)


def _remove(path: str) -> None:
    with contextlib.suppress(OSError):
        os.remove(path)
