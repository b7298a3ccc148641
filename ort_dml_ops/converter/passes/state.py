"""What the convert passes share: the request (target, strategy) and what they report."""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any

import onnx

from ..report import NodeReport
from ..rules.fold_if import FoldResult

if TYPE_CHECKING:
    from .declarations import Declared


@dataclasses.dataclass
class ConvertState:
    target: str
    strategy: str
    check_indices: bool = True
    #: what the input declares (graph I/O, value_info names): RestoreDeclarationsPass
    declared: Declared | None = None
    #: the model as it is now, serialized without its weights (light.serialize_light), when
    #: the caller already has it (the loaded ModelProto): the first step that needs onnx's C
    #: API takes it (and may change it) instead of serializing the model again; a step that
    #: changes the model before drops it
    light: onnx.ModelProto | None = None
    #: every node and value name in use in the model (the rules' new names avoid them)
    names: set[str] = dataclasses.field(default_factory=set)
    #: the opset step's report part (rules/opset.py plan)
    opset: dict[str, Any] = dataclasses.field(default_factory=dict)
    #: the If folding's notes and repaired output declarations (rules/fold_if.py)
    folds: FoldResult = dataclasses.field(default_factory=FoldResult)
    reports: list[NodeReport] = dataclasses.field(default_factory=list)
    #: value name → dims known from `convert(input_shapes=...)` (converter/size_hints.py)
    size_hints: dict[str, tuple[int, ...]] = dataclasses.field(default_factory=dict)
    #: value name → upper bounds of dims only the data decides (a NonZero's count), where the
    #: inputs' sizes are known (converter/size_hints.py known_sizes)
    size_bounds: dict[str, tuple[int, ...]] = dataclasses.field(default_factory=dict)
    #: a node's own strategy, by the name of its first output (`convert(node_strategies=...)`):
    #: one of the STRATEGIES, or "rule:NAME" for that rule alone (`tune` writes its choices so)
    node_strategies: dict[str, str] = dataclasses.field(default_factory=dict)
    #: the names in use before the rewrites (`names` grows as the rules name what they make)
    names_before: frozenset[str] = frozenset()
    #: whole-graph fixes made before the rules, one line each (report: `normalized`)
    normalized: list[str] = dataclasses.field(default_factory=list)
