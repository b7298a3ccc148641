"""Kernel tables (data) and ONNX Runtime's kernel matching rules over them.

Mirrors ``onnxruntime/core/framework/kernel_registry.cc``:

* ``VerifyVersion``: a kernel matches a node whose since-version is ``since_ver`` when
  ``kernel_start == since_ver`` or (``kernel_end != INT_MAX`` and ``start <= since_ver <= end``).
  A kernel registered without an end version therefore matches only its own start version.
  Every DML kernel is registered that way (``AbiCustomRegistry.cpp``: ``.SinceVersion(min)``).
* ``MatchKernelDefTypes``: for each of the kernel's type constraints, the *first present* node
  argument bound to that type string (through the op schema's formal parameters) must have one of
  the kernel's types. Constraint names the schema does not use are ignored.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import cache, cached_property
from pathlib import Path

DATA_DIR = Path(__file__).resolve().parent / "data"


@dataclass(frozen=True)
class Kernel:
    op: str
    domain: str
    since: int
    end: int | None  # None: registered without an end version (INT_MAX)
    types: (
        dict | None
    )  # constraint name -> frozenset of type strings; None: not recorded (not checked)
    cpu_inputs: frozenset = frozenset()
    cpu_outputs: frozenset = frozenset()
    query: str | None = None
    extra: dict = field(default_factory=dict, compare=False, hash=False)

    def version_text(self) -> str:
        return f"{self.since}" if self.end is None else f"{self.since}-{self.end}"

    def matches_version(self, since_ver: int) -> bool:
        """kernel_registry.cc VerifyVersion."""
        if self.since == since_ver:
            return True
        return self.end is not None and self.since <= since_ver <= self.end


@dataclass
class KernelTable:
    provider: str
    build: str
    source: dict
    by_op: dict  # (domain, op) -> list[Kernel]
    live: bool = False

    @cached_property
    def domains(self) -> frozenset:
        # cached: asked once per node, and the table holds thousands of kernels
        return frozenset(d for d, _ in self.by_op)

    def kernels(self, op: str, domain: str) -> list:
        return self.by_op.get((domain, op), [])

    def find(self, op: str, domain: str, since_ver: int, arg_type) -> tuple:
        """(kernel, None) or (None, why): version match first, then type constraints.

        ``arg_type(constraint_name) -> type string | None`` gives the type of the first present
        argument bound to that constraint (None: unbound or unknown, which ORT treats as a pass).
        """
        cands = self.kernels(op, domain)
        if not cands:
            return None, "no_op"
        versioned = [k for k in cands if k.matches_version(since_ver)]
        if not versioned:
            return None, "no_version"
        mismatch = None
        for k in versioned:
            bad = _type_mismatch(k, arg_type)
            if bad is None:
                return k, None
            mismatch = mismatch or (k, bad)
        return None, mismatch


def _type_mismatch(k: Kernel, arg_type):
    if not k.types:
        return None
    for name, allowed in k.types.items():
        t = arg_type(name)
        if t is not None and t not in allowed:
            return (name, t)
    return None


def _rows_to_table(data: dict, live: bool = False) -> KernelTable:
    by_op: dict = {}
    for r in data["kernels"]:
        types = r.get("types")
        k = Kernel(
            op=r["op"],
            domain=r["domain"],
            since=r["since"],
            end=r.get("end"),
            types=None
            if types is None
            else {n: frozenset(v) for n, v in types.items()},
            cpu_inputs=frozenset(r.get("cpu_inputs", ())),
            cpu_outputs=frozenset(r.get("cpu_outputs", ())),
            query=r.get("query"),
            extra={
                k2: v
                for k2, v in r.items()
                if k2 in ("fusable", "note", "typed_as", "attrs_on_target", "layout")
            },
        )
        by_op.setdefault((k.domain, k.op), []).append(k)
    return KernelTable(
        data["provider"], data.get("build", ""), data.get("source", {}), by_op, live
    )


@cache
def recorded(name: str) -> KernelTable:
    """A recorded table from ort_dml_ops/targets/data/<name>."""
    return _rows_to_table(json.loads((DATA_DIR / name).read_text()))


@cache
def live(provider: str) -> KernelTable | None:
    """The installed onnxruntime's own table for `provider` (get_all_opkernel_def), or None."""
    try:
        import onnxruntime
        from onnxruntime.capi import _pybind_state as C
    except ImportError:  # pragma: no cover
        return None
    if provider not in onnxruntime.get_available_providers():
        return None
    try:
        defs = C.get_all_opkernel_def()
    except Exception:  # noqa: BLE001 # pragma: no cover - builds without schema export
        return None
    rows = []
    for d in defs:
        if d.provider != provider:
            continue
        start, end = d.version_range
        rows.append(
            {
                "op": d.op_name,
                "domain": d.domain,
                "since": start,
                "end": None if end >= 2**31 - 1 else end,
                "types": {n: list(v) for n, v in d.type_constraints.items()},
            }
        )
    if not rows:
        return None
    return _rows_to_table(
        {
            "provider": provider,
            "build": f"onnxruntime {onnxruntime.__version__} (installed)",
            "source": {"how": "get_all_opkernel_def() of the installed build"},
            "kernels": rows,
        },
        live=True,
    )
