"""What the convert passes share: the request (target, strategy) and what they report."""

from __future__ import annotations

import dataclasses

from ..report import NodeReport


@dataclasses.dataclass
class ConvertState:
    target: str
    strategy: str
    check_indices: bool = True
    #: every node and value name in use in the model (the rules' new names avoid them)
    names: set[str] = dataclasses.field(default_factory=set)
    reports: list[NodeReport] = dataclasses.field(default_factory=list)
    #: whole-graph fixes made before the rules, one line each (report: `normalized`)
    normalized: list[str] = dataclasses.field(default_factory=list)
