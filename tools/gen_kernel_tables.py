"""Regenerate the recorded kernel tables under ort_dml_ops/targets/data/ (maintainer tool).

Tables are data, not code: each JSON file lists the kernels one execution provider registers,
as ``{"op", "domain", "since", "end", "types", "cpu_inputs", "cpu_outputs", "query", "fusable"}``
rows, plus a ``source`` block naming exactly where they were read from. Recorded WebGPU rows
may add ``attrs_on_target`` (the attribute values the plugin took) and ``layout: "NHWC"`` (ORT's
layout transformation moved the node to NHWC for the plugin: it came back renamed).

Usage (each sub-command writes one file)::

    # DML: parse OperatorRegistration.cpp at an ORT revision of a local git dir
    python tools/gen_kernel_tables.py dml --git-dir /path/onnxruntime.git --rev 62e8ba933 \
        --tag "onnxruntime-directml 1.24.4"
    # CPU EP of a given onnxruntime build: a site-packages dir holding that wheel unpacked
    #   (pip download --no-deps onnxruntime==1.24.4; python -m zipfile -e WHEEL DIR)
    python tools/gen_kernel_tables.py cpu --site DIR --name cpu_1.24.4.json
    # CUDA: parse cuda_execution_provider.cc (+ contrib) at an ORT revision
    python tools/gen_kernel_tables.py cuda --git-dir /path/onnxruntime.git --rev 62e8ba933
    # WebGPU plugin EP: RECORDED from the installed plugin (make webgpu-lane; . $LANE/env.sh)
    python tools/gen_kernel_tables.py webgpu

WebGPU is recorded, not parsed: the plugin (onnxruntime-ep-webgpu) keeps its kernel registry
inside its own library, out of reach of ``get_all_opkernel_def()``. Every op of
``tools/webgpu_lane/cases.py: OPS`` (the families, everything the lowerings emit, common
ops of exported models) at each of its since-versions in opsets 11-26 and each element type its
schema allows is opened as a single-node model on the WebGPU EP with
``session.record_ep_graph_assignment_info`` = "1"; ORT's ``get_provider_graph_assignment_info()``
says whether the plugin took it. A row is written per (op, since-version, type binding) the
plugin took, with ``end`` = ``since`` (only what was tried is claimed); the inputs its kernel
reads in CPU memory are found by feeding each int64 parameter from a CPU node and counting the
Memcpy kernels in the run's profile. ``source.tried`` lists every (op, since-version) tried;
``source.not_taken`` the bindings the plugin left to the CPU EP.

The ORT source is only *read* here; no code of it is copied into the project.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
from pathlib import Path

DATA = Path(__file__).resolve().parents[1] / "ort_dml_ops" / "targets" / "data"
INT_MAX = 2**31 - 1

DML_REG = "onnxruntime/core/providers/dml/DmlExecutionProvider/src/Operators/OperatorRegistration.cpp"
DML_DIR = "onnxruntime/core/providers/dml/DmlExecutionProvider/src/Operators/"
DML_VERSIONS = "onnxruntime/core/providers/dml/OperatorAuthorHelper/OperatorVersions.h"
CUDA_EP = "onnxruntime/core/providers/cuda/cuda_execution_provider.cc"
CUDA_CONTRIB = "onnxruntime/contrib_ops/cuda/cuda_contrib_kernels.cc"

# DML SupportedTensorDataTypes flag -> ONNX type string (AbiCustomRegistry registers the tensor
# flags only; String and Complex are never registered; sequences become seq(tensor(...))).
_DML_SCALAR = {
    "Float32": "float",
    "UInt4": "uint4",
    "Int4": "int4",
    "UInt8": "uint8",
    "Int8": "int8",
    "UInt16": "uint16",
    "Int16": "int16",
    "Int32": "int32",
    "Int64": "int64",
    "Bool": "bool",
    "Float16": "float16",
    "Float64": "double",
    "UInt32": "uint32",
    "UInt64": "uint64",
}


def _git_show(git_dir: str, rev: str, path: str) -> str:
    return subprocess.run(
        ["git", "--git-dir", git_dir, "show", f"{rev}:{path}"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout


def _git_rev(git_dir: str, rev: str) -> str:
    return subprocess.run(
        ["git", "--git-dir", git_dir, "rev-parse", rev],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()


def _versions_table(text: str) -> dict:
    """OperatorVersions.h: {("OnnxOperatorSet13", "Scatter"): 13, ...}."""
    out: dict = {}
    for ns, body in re.findall(
        r"namespace\s+(\w+OperatorSet\d+)\s*\{(.*?)\}", text, re.S
    ):
        for name, v in re.findall(r"sc_sinceVer_(\w+)\s*=\s*(\d+)", body):
            out[(ns, name)] = int(v)
    return out


def _dml_flags(src: str) -> dict[str, set[str]]:
    body = re.search(
        r"enum class SupportedTensorDataTypes[^{]*\{(.*?)\};", src, re.S
    ).group(1)
    body = re.sub(r"//[^\n]*", "", body)
    flags: dict[str, set[str]] = {}
    for item in body.split(","):
        if "=" not in item:
            continue
        name, expr = (x.strip() for x in item.split("=", 1))
        expr = " ".join(expr.split())
        if "<<" in expr:
            if name in _DML_SCALAR:
                flags[name] = {f"tensor({_DML_SCALAR[name]})"}
            elif name.startswith("Sequence") and name[8:] in _DML_SCALAR:
                flags[name] = {f"seq(tensor({_DML_SCALAR[name[8:]]}))"}
            else:
                flags[name] = set()
        elif "static_cast" in expr:  # All
            flags[name] = set().union(*flags.values())
        else:
            flags[name] = set().union(*(flags[p.strip()] for p in expr.split("|")))
    return flags


def _dml_type_expr(expr: str, flags: dict[str, set[str]]) -> set[str]:
    expr = re.sub(r"/\*.*?\*/", "", expr)
    return set().union(
        *(flags[p.strip().split("::")[-1]] for p in expr.split("|") if p.strip())
    )


def _split_args(s: str) -> list[str]:
    out, depth, cur = [], 0, ""
    for ch in s:
        if ch in "(<{[":
            depth += 1
        elif ch in ")>}]":
            depth -= 1
        if ch == "," and depth == 0:
            out.append(cur.strip())
            cur = ""
        else:
            cur += ch
    if cur.strip():
        out.append(cur.strip())
    return out


def gen_dml(git_dir: str, rev: str, tag: str) -> dict:
    src = _git_show(git_dir, rev, DML_REG)
    versions = _versions_table(_git_show(git_dir, rev, DML_VERSIONS))
    flags = _dml_flags(src)
    names = {
        n: re.findall(r'"([^"]*)"', v)
        for n, v in re.findall(
            r"std::array<const char\*,\s*\d+>\s+(\w+)\s*=\s*\{([^}]*)\}", src
        )
    }
    types = {
        n: _split_args(v)
        for n, v in re.findall(
            r"std::array<SupportedTensorDataTypes,\s*\d+>\s+(\w+)\s*=\s*(?:/\*.*?\*/\s*)?\{([^}]*)\}",
            src,
        )
    }
    for alias, orig in re.findall(
        r"std::array<SupportedTensorDataTypes,\s*\d+>\s+(\w+)\s*=\s*(\w+)\s*;", src
    ):
        types[alias] = types[orig]
    for alias, orig in re.findall(
        r"std::array<const char\*,\s*\d+>\s+(\w+)\s*=\s*(\w+)\s*;", src
    ):
        names[alias] = names[orig]
    table = re.search(
        r"operatorRegistrationInformationTable\[\]\s*=\s*\{(.*?)\n\};", src, re.S
    ).group(1)
    rows = []
    domains = {
        "REG_INFO": "",
        "REG_INFO_VER": "",
        "REG_INFO_COPY": "",
        "REG_INFO_DYNAMIC_OUTPUTS": "",
        "REG_INFO_MS": "com.microsoft",
        "REG_INFO_MS_ALIAS": "com.microsoft",
        "REG_INFO_MSDML": "com.microsoft.dml",
    }
    for line in table.splitlines():
        s = re.sub(r"/\*.*?\*/", "", line).split("//")[0].strip()
        if (
            s.startswith("#")
            and "DML_TARGET_VERSION" not in s
            and not s.startswith("#endif")
        ):
            raise SystemExit(f"unexpected preprocessor line in the table: {s}")
        m = re.match(r"\{(REG_INFO\w*)\((.*)\)\s*\},", s)
        if not m:
            continue
        macro, args = m.group(1), _split_args(m.group(2))
        ver, op = int(args[0]), args[1]
        rest = args[2:]
        if macro == "REG_INFO_MS_ALIAS":
            rest = rest[1:]
        tnames, tlist = rest[0], rest[1]
        graph = rest[2] if len(rest) > 2 else "DmlGraphSupport::Supported"
        cpu_inputs: list[int] = []
        query = None
        if len(rest) > 3:
            cm = re.match(r"requiredConstantCpuInputs\((.*)\)", rest[3])
            cpu_inputs = (
                [int(x) for x in cm.group(1).split(",") if x.strip()] if cm else []
            )
        if len(rest) > 5 and rest[5] not in ("nullptr",):
            query = rest[5]
        domain = domains[macro]
        constraint_names = names[tnames]
        constraint_types = types[tlist]
        assert len(constraint_names) == len(constraint_types), (op, tnames, tlist)
        ns = ("OnnxOperatorSet" if domain == "" else "MsftOperatorSet") + str(ver)
        since = versions.get((ns, op))
        if since is None:
            raise SystemExit(f"{DML_VERSIONS}: no {ns}::sc_sinceVer_{op}")
        rows.append(
            {
                "op": op,
                "domain": domain,
                "since": since,  # REG_INFO(ver, Op) registers OnnxOperatorSet<ver>::sc_sinceVer_<Op>
                "end": None,  # AbiCustomRegistry.cpp: .SinceVersion(minimumOperatorSetVersion) only
                "types": {
                    n: sorted(_dml_type_expr(t, flags))
                    for n, t in zip(constraint_names, constraint_types)
                },
                "cpu_inputs": cpu_inputs,
                "cpu_outputs": [0] if op in ("Shape", "Size") else [],
                "query": query,
                "fusable": "NotSupported" not in graph,
            }
        )
    # Kernels registered outside the table (same file / DmlDFT.h, DmlSTFT.h, DmlGridSample.h).
    for cls in re.findall(
        r"ONNX_OPERATOR_KERNEL_CLASS_NAME\(kDmlExecutionProvider,\s*kOnnxDomain,\s*(\d+),\s*(\w+)\)\s*>",
        src,
    ):
        ver, op = int(cls[0]), cls[1]
        rows.append(
            {
                "op": op,
                "domain": "",
                "since": ver,
                "end": None,
                "types": {},
                "cpu_inputs": [0] if op == "If" else [],
                "cpu_outputs": [],
                "query": None,
                "fusable": False,
                "note": "CPU-implemented kernel registered as DML (RegisterCpuOperatorsAsDml)",
            }
        )
    for op, vers, hdr in (
        ("DFT", (17, 20), "DmlDFT.h"),
        ("STFT", (17,), "DmlSTFT.h"),
        ("GridSample", None, "DmlGridSample.h"),
    ):
        text = _git_show(git_dir, rev, DML_DIR + hdr)
        if vers is None:
            vers = tuple(
                sorted(
                    {
                        int(v)
                        for v in re.findall(
                            r"minimumOperatorSetVersion\s*=\s*(\d+)", text
                        )
                    }
                )
            )
        for v in vers:
            rows.append(
                {
                    "op": op,
                    "domain": "",
                    "since": v,
                    "end": None,
                    "types": {},
                    "cpu_inputs": [],
                    "cpu_outputs": [],
                    "query": None,
                    "fusable": False,
                    "note": f"registered by {hdr}; type constraints not recorded (not checked)",
                }
            )
    return {
        "provider": "DmlExecutionProvider",
        "build": tag,
        "source": {
            "repo": "microsoft/onnxruntime",
            "revision": _git_rev(git_dir, rev),
            "file": DML_REG,
            "since_versions": DML_VERSIONS,
            "dml_target_version": "0x6400 (DirectML 1.15, bundled with the 1.24 DML build): "
            "rows under '#if DML_TARGET_VERSION >= 0x6400' are included",
        },
        "kernels": rows,
    }


def gen_cpu(site: str, name: str) -> dict:
    code = (
        "import json,sys;from onnxruntime.capi import _pybind_state as s;import onnxruntime as o;"
        "print(json.dumps({'version':o.__version__,'k':[[k.op_name,k.domain,list(k.version_range),"
        "{a:list(b) for a,b in k.type_constraints.items()},k.provider] for k in s.get_all_opkernel_def()]}))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        check=True,
        capture_output=True,
        text=True,
        cwd=site,
        env={"PYTHONPATH": site, "PATH": "/usr/bin:/bin"},
    ).stdout
    data = json.loads(out)
    rows = []
    for op, domain, (start, end), tc, provider in data["k"]:
        if provider != "CPUExecutionProvider":
            continue
        rows.append(
            {
                "op": op,
                "domain": domain,
                "since": start,
                "end": None if end >= INT_MAX else end,
                "types": {k: sorted(v) for k, v in tc.items()},
            }
        )
    rows.sort(key=lambda r: (r["domain"], r["op"], r["since"]))
    return {
        "provider": "CPUExecutionProvider",
        "build": f"onnxruntime {data['version']} (Linux x86-64 wheel)",
        "source": {
            "how": "onnxruntime.capi._pybind_state.get_all_opkernel_def()",
            "note": "the Linux CPU EP of a release has the same kernel set as the Windows one",
        },
        "kernels": rows,
    }


def gen_cuda(git_dir: str, rev: str) -> dict:
    rows: dict[tuple, dict] = {}
    pat = re.compile(
        r"BuildKernelCreateInfo<\s*(ONNX|CUDA_MS|ONNX_OPERATOR)?[A-Z_]*?(VERSIONED_)?(TYPED_)?(?:KERNEL_CLASS_NAME|CLASS_NAME)"
        r"\(\s*kCudaExecutionProvider\s*,\s*(k\w+Domain)\s*,\s*([^)]*)\)\s*>"
    )
    doms = {
        "kOnnxDomain": "",
        "kMSDomain": "com.microsoft",
        "kMLDomain": "ai.onnx.ml",
        "kPytorchAtenDomain": "org.pytorch.aten",
    }
    for path in (CUDA_EP, CUDA_CONTRIB):
        src = _git_show(git_dir, rev, path)
        src = re.sub(r"//[^\n]*", "", src)
        for m in pat.finditer(src):
            versioned, typed, dom, args = (
                m.group(2),
                m.group(3),
                m.group(4),
                _split_args(m.group(5)),
            )
            start = int(args[0])
            end = int(args[1]) if versioned else None
            op = args[-1]
            key = (doms.get(dom, dom), op, start, end)
            r = rows.setdefault(
                key,
                {
                    "op": op,
                    "domain": key[0],
                    "since": start,
                    "end": end,
                    "types": None,
                    "typed_as": [],
                },
            )
            if typed:
                r["typed_as"].append(args[2 if versioned else 1])
    out = sorted(rows.values(), key=lambda r: (r["domain"], r["op"], r["since"]))
    return {
        "provider": "CUDAExecutionProvider",
        "build": f"onnxruntime-gpu source at {rev}",
        "source": {
            "repo": "microsoft/onnxruntime",
            "revision": _git_rev(git_dir, rev),
            "files": [CUDA_EP, CUDA_CONTRIB],
            "note": "op / domain / version ranges from the kernel declarations; type constraints are "
            "not recorded (types: null = not checked; typed_as lists the C++ types of typed "
            "registrations for reference). The live table is used instead when the installed "
            "onnxruntime has the CUDA EP.",
        },
        "kernels": out,
    }


def gen_webgpu() -> dict:
    import importlib.metadata
    import os

    import onnxruntime

    from ort_dml_ops.bench.webgpu import adapter_name

    # tools/webgpu_lane: this script's folder is on sys.path
    from webgpu_lane import record as R

    if os.environ.get(
        "ORT_WEBGPU_EP_ALLOW_SOFTWARE_ADAPTER"
    ) != "1" and not os.environ.get("VK_ICD_FILENAMES"):
        print(
            "note: VK_ICD_FILENAMES / ORT_WEBGPU_EP_ALLOW_SOFTWARE_ADAPTER are unset; "
            "without a GPU source $WEBGPU_LANE/env.sh first (make webgpu-lane)",
            file=sys.stderr,
        )
    groups: dict = {}
    tried: dict = {}
    errors = []
    first_on_target: dict = {}
    # (domain, op, since) that ORT's layout transformation moved to NHWC for the plugin
    nhwc: set = set()
    for case in R.cases():
        r = R.record_case(case)
        if "error" in r:
            errors.append(f"{r['case']}: {r['error']}")
            continue
        if r["ep"] is None:
            errors.append(
                f"{r['case']}: node absent from the assignment record (folded)"
            )
            continue
        # (domain, op, since): contrib ops (com.microsoft) share some names with ONNX's (Gelu)
        kernel = (r["domain"], r["op"], r["since"])
        qualified = f"{r['domain']}::{r['op']}" if r["domain"] else r["op"]
        tried.setdefault(f"{qualified}-{r['since']}", set()).add(r["ep"])
        key = (*kernel, json.dumps(r["bindings"], sort_keys=True))
        groups.setdefault(key, []).append((r["attrs"], r["ep"]))
        if r["nhwc"]:
            nhwc.add(kernel)
        if r["ep"] == R.WEBGPU:
            first_on_target.setdefault(kernel, case)
    cpu_inputs = {k: R.record_cpu_inputs(c) for k, c in first_on_target.items()}
    rows, not_taken = [], []
    for (domain, op, since, binding), seen in sorted(groups.items()):
        on = [a for a, ep in seen if ep == R.WEBGPU]
        if not on:
            not_taken.append(f"{op}-{since} {binding}")
            continue
        row = {
            "op": op,
            "domain": domain,
            "since": since,
            "end": since,
            "types": {c: [t] for c, t in json.loads(binding).items()},
            "cpu_inputs": cpu_inputs.get((domain, op, since), [])
            or R.KNOWN_CPU_INPUTS.get(op, []),
            "cpu_outputs": [0] if op in ("Shape", "Size") else [],
        }
        if (domain, op, since) in nhwc:
            row["layout"] = "NHWC"
        if len(on) < len(
            seen
        ):  # the plugin takes only some attribute values (recorded ones)
            row["attrs_on_target"] = on
        rows.append(row)
    return {
        "provider": R.WEBGPU,
        "build": f"onnxruntime-ep-webgpu {importlib.metadata.version('onnxruntime-ep-webgpu')} "
        f"in onnxruntime {onnxruntime.__version__}",
        "source": {
            "how": "recorded: single-op models opened on the plugin with "
            "session.record_ep_graph_assignment_info=1 (tools/gen_kernel_tables.py webgpu, "
            "tools/webgpu_lane/record.py)",
            "adapter": adapter_name(),
            "cpu_outputs": "Shape and Size write their output in CPU memory (as in every ORT GPU EP)",
            "tried": sorted(f"{k}" for k in tried),
            "not_taken": not_taken,
            "not_recorded": errors,
        },
        "kernels": rows,
    }


def main(argv=None) -> int:
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    sub = p.add_subparsers(dest="what", required=True)
    d = sub.add_parser("dml")
    d.add_argument("--git-dir", required=True)
    d.add_argument("--rev", required=True)
    d.add_argument("--tag", default="onnxruntime-directml 1.24.4")
    d.add_argument("--name", default="dml_1.24.4.json")
    c = sub.add_parser("cpu")
    c.add_argument("--site", required=True)
    c.add_argument("--name", default="cpu_1.24.4.json")
    u = sub.add_parser("cuda")
    u.add_argument("--git-dir", required=True)
    u.add_argument("--rev", required=True)
    u.add_argument("--name", default="cuda_recorded.json")
    wg = sub.add_parser("webgpu")
    wg.add_argument("--name", default="webgpu_0.4.0.json")
    a = p.parse_args(argv)
    if a.what == "dml":
        data = gen_dml(a.git_dir, a.rev, a.tag)
    elif a.what == "cpu":
        data = gen_cpu(a.site, a.name)
    elif a.what == "webgpu":
        data = gen_webgpu()
    else:
        data = gen_cuda(a.git_dir, a.rev)
    out = DATA / a.name
    out.write_text(json.dumps(data, indent=1, sort_keys=False) + "\n")
    print(f"{out}: {len(data['kernels'])} kernels")
    return 0


if __name__ == "__main__":
    sys.exit(main())
