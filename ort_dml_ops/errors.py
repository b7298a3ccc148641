"""One exception type for user mistakes: the CLI prints it as one line, never a traceback."""

from typing import Any


class UserError(Exception):
    """A problem with what the user handed us (a path, a model, an argument)."""


def node_label(node: Any, where: str = "main") -> str:
    """How a one-line error names a node: `CumSum node 'n1'` (or `a CumSum node` when it has no
    name), with the subgraph it sits in when that is not the main graph."""
    label = (
        f"{node.op_type} node {node.name!r}" if node.name else f"a {node.op_type} node"
    )
    return label if where == "main" else f"{label} (in {where})"
