"""A check and what the AD system adds to it: the compiled gradient beside eager's
(``compiled=``), the registration checks of the custom operators f calls
(``opcheck=``), f's evaluations spread over workers (``executor=``)."""

from __future__ import annotations

from typing import Any

from ..fd.executors import spread_evaluator
from .compiled import compare_compiled, refuse_uncompilable
from .opcheck import run_opcheck, with_opcheck
from .options import Options, choose_mode
from .problem import Problem, at_narrow_point
from .report import CheckReport

__all__ = ["check_extended"]


def check_extended(
    p: Problem,
    opts: Options,
    check: Any,
    *,
    mode: str,
    order: int,
    compiled: tuple[bool, str | None] = (False, None),
    opcheck: bool = True,
    executor: Any = None,
) -> CheckReport:
    """``check(p, opts, mode=, order=)`` (:func:`~.api.check_problem`), with the
    compiled comparison, opcheck's findings and the executor where asked.

    opcheck runs first: when the check itself then fails to run (a custom op
    whose backward was never registered raises in the backward pass), its
    findings are added to the error, which names what is missing.
    """
    compare, how = compiled
    if compare:
        refuse_uncompilable(p, choose_mode(mode, p.n, p.m))
    at_narrow_point(p)  # f's first evaluations: after every refusal, before the workers
    spread = spread_evaluator(p.rmap, executor, p.device) if p.rmap is not None else None
    if spread is not None:
        p.evaluator = spread
    found = run_opcheck(p) if opcheck else None
    try:
        report = check(p, opts, mode=mode, order=order)
    except Exception as exc:
        if found is not None and not found.passed:
            exc.add_note("\n".join(found.lines()))
        raise
    if compare:
        report = compare_compiled(p, report, how, opts)
    return with_opcheck(report, found)
