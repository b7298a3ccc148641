"""`ort-dml-ops VERB ...` (also `python -m ort_dml_ops`). Verbs live in ort_dml_ops/commands/.

Exit codes: 0 ok, 1 failure, 2 usage, 141 when stdout's reader closed the pipe (as SIGPIPE
would; the work itself was done). A user mistake is one line on stderr, no traceback.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys

from ._version import __version__
from .errors import UserError
from .writes import Interrupted

#: Each name is a module ort_dml_ops.commands.<name>.
VERBS = ("run", "inspect", "convert", "tune", "check", "demo", "bench")


class _Parser(argparse.ArgumentParser):
    """argparse, but a usage error is one line (`ort-dml-ops: error: ...`, exit 2), like every
    other error of the CLI; `--help` still prints the usage."""

    def error(self, message: str):
        self.exit(
            2,
            f"ort-dml-ops: error: {self.prog.removeprefix('ort-dml-ops ')}: {message} (see --help)\n",
        )


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="ort-dml-ops",
        description="Make ONNX CumSum, CumProd and ScatterElements run on the DirectML GPU.",
    )
    parser.add_argument(
        "--version", action="version", version=f"ort-dml-ops {__version__}"
    )
    sub = parser.add_subparsers(dest="verb", metavar="VERB")
    for verb in VERBS:
        importlib.import_module(f"ort_dml_ops.commands.{verb}").add_parser(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help(sys.stderr)
        return 2
    try:
        rc = int(args.func(args) or 0)
        sys.stdout.flush()  # a closed pipe shows here, inside the handlers, not at exit
        return rc
    except BrokenPipeError:
        # the reader of stdout went away (`... | head -1`): whatever was written is complete
        # (outputs are committed before anything is printed); no traceback, and no second
        # error when the interpreter flushes stdout at exit
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141  # what a shell reports for a process SIGPIPE ended
    except UserError as exc:
        print(f"ort-dml-ops: error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("ort-dml-ops: interrupted", file=sys.stderr)
        return 130
    except (
        Interrupted
    ) as exc:  # SIGTERM/SIGINT while writing: the temporaries are already removed
        print(f"ort-dml-ops: {exc}", file=sys.stderr)
        return 128 + exc.signum


if __name__ == "__main__":
    sys.exit(main())
