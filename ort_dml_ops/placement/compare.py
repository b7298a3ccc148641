"""Hold a predicted placement against ORT's recorded one (``truth.record``), node by node.

A node ORT assigned must be predicted on the same EP under the same name; a node predicted to
run must be one ORT assigned (else the model missed an ORT step that removes or renames it); the
Memcpy count must equal the copies that ran (profile) — or, where the run itself failed, the
copies ORT logged adding at session creation.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Agreement:
    name: str
    agree: int
    total: int
    copies_predicted: int
    copies_real: int | None
    copies_source: str  # "profile" | "log" | "-"
    problems: list = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems and self.copies_predicted == self.copies_real


def real_copies(truth: dict) -> tuple:
    if truth.get("ok"):
        return len(truth.get("memcpy") or []), "profile"
    if truth.get("assignment"):
        return len(truth.get("memcpy_logged") or []), "log"
    return None, "-"


def compare(name: str, report, truth: dict) -> Agreement:
    real = truth.get("nodes") or {}
    predicted = {n.name: n.provider for n in report.nodes}
    problems = []
    for node, ep in real.items():
        got = predicted.get(node, "<not in the report>")
        if got != ep:
            problems.append(f"{node}: ORT {ep}, predicted {got}")
    for node, ep in predicted.items():
        if ep is not None and node not in real:
            problems.append(f"{node}: predicted {ep}, ORT assigned no such node")
    copies, source = real_copies(truth)
    agree = sum(1 for node, ep in real.items() if predicted.get(node) == ep)
    return Agreement(name, agree, len(real), report.copies, copies, source, problems)
