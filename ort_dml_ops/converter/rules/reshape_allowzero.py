"""Reshape(allowzero=1) -> Reshape without allowzero, for the DML EP.

torch.onnx's dynamo exporter writes every `view` / `reshape` as Reshape-14+ with allowzero=1.
ONNX Runtime's DML EP claims that node and then fails to create its kernel — at session
creation when the input shape is static (80070057), at the first run when it is symbolic —
while allowzero=0 runs: the EP's Reshape is a copy whose shape helper never reads allowzero
(DmlExecutionProvider/src/Operators/DmlOperatorCopy.cpp, OperatorAuthorHelper/OperatorHelper.cpp
ReshapeHelper), found on the real EP in the lane (tests/dml/test_known.py, issue 13 item 5).
Every dynamo export (RoBERTa's node_view_1, PyG's GCNConv) fails on DirectML because of it.

allowzero=1 differs from the default only where the shape holds a 0 (a literal empty dim, not
"copy"). The rewrite keeps that meaning: a constant shape with no 0 just drops the attribute;
otherwise its zeros become -1 (`emitter.zeros_inferred`), which Reshape infers as 0 — exact where
at most one dim is 0 (allowzero=1 forbids a -1 beside a 0), a loud Reshape failure with two.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ._base import RewriteContext
from .emitter import Emitter, zeros_inferred


def drop_allowzero(
    graphs: Iterable[tuple[Any, str, int]], names: set[str]
) -> list[str]:
    """Rewrite every Reshape(allowzero=1) in `graphs` (graph, where, opset); one line per node."""
    done = []
    for graph, where, opset in graphs:
        for node in list(graph):
            a = node.attributes.get("allowzero")
            if (
                node.op_type != "Reshape"
                or node.domain not in ("", "ai.onnx")
                or a is None
                or int(a.value) != 1
            ):
                continue
            if len(node.inputs) < 2 or node.inputs[1] is None:
                continue
            e = Emitter(
                RewriteContext(opset=opset, target="dml", names=names, graph=graph),
                node.name or "Reshape",
            )
            shape = zeros_inferred(e, node.inputs[1])
            graph.insert_before(node, e.nodes)
            node.replace_input_with(1, shape)
            del node.attributes["allowzero"]
            how = "constant shape" if not e.nodes else "zeros mapped to -1 at run time"
            done.append(
                f"{node.name or 'Reshape'} ({where}): allowzero=1 dropped ({how}); "
                "the DML EP fails kernel creation on allowzero=1"
            )
    return done
