"""f through ``torch.compile``, for comparing its gradient with eager's.

torch compiles lazily: the forward graph at the first call, the backward one
at the first backward pass. So compiling means running a *probe* (the
checker's own forward and backward passes); whatever fails in it, where eager
f ran on the same arguments, is a compile failure. Asked for no backend in
particular, inductor is tried first and, where it fails (no C++ compiler, an
inductor error), ``aot_eager`` (AOTAutograd's forward and backward graphs, run
by eager kernels) takes its place, and the result says so.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch

from ...errors import CompileError

__all__ = ["Compiled", "compile_function", "DEFAULT_BACKEND", "FALLBACK_BACKEND"]

DEFAULT_BACKEND = "inductor"
#: AOTAutograd's graphs without inductor's code generation: needs no C++ compiler
FALLBACK_BACKEND = "aot_eager"


@dataclass(frozen=True)
class Compiled:
    """How f was compiled, and what the probe returned.

    ``backend`` is the torch.compile backend that ran; ``fallback`` why it is
    not the one asked for ("" when it is); ``seconds`` the compile and the
    probe's first passes; ``graphs`` the graphs dynamo compiled for it (more
    than one: graph breaks; 0: graphs compiled earlier were reused).
    """

    backend: str
    fallback: str
    seconds: float
    graphs: int
    result: Any


def _graphs_compiled() -> int:
    from torch._dynamo.utils import counters

    return int(counters["stats"]["unique_graphs"])


def _short(exc: BaseException, limit: int = 400) -> str:
    """The first lines of a (long) torch.compile error: what failed, not its advice."""
    text = str(exc).strip().split("\n\n")[0].strip()
    text = text if len(text) <= limit else text[: limit - 3] + "..."
    return f"{type(exc).__name__}: {text}"


#: Recompiles of one function allowed while probing: past dynamo's own limit (8) it
#: would run f eagerly without a word, and eager's gradient would pass as the compiled one
RECOMPILE_LIMIT = 64


def _attempt(f: Callable, backend: str, probe: Callable[[Callable], Any]) -> Compiled:
    import torch._dynamo.config as dynamo

    before = _graphs_compiled()
    start = time.perf_counter()
    limit = max(getattr(dynamo, "recompile_limit", 0), RECOMPILE_LIMIT)
    patched = hasattr(dynamo, "recompile_limit")
    with dynamo.patch(recompile_limit=limit) if patched else contextlib.nullcontext():
        result = probe(torch.compile(f, backend=backend))
    return Compiled(backend, "", time.perf_counter() - start, _graphs_compiled() - before, result)


def compile_function(
    f: Callable, backend: str | None, probe: Callable[[Callable], Any], name: str = "f"
) -> Compiled:
    """``torch.compile(f, backend=...)`` and ``probe(compiled_f)``, its first use.

    ``backend`` None tries inductor, then aot_eager where inductor fails; a
    named backend is used alone. Raises :class:`~gradexplorer.errors.CompileError`
    when compiling fails (graph breaks are no failure: dynamo runs the pieces
    between them eagerly).
    """
    first = backend or DEFAULT_BACKEND
    try:
        return _attempt(f, first, probe)
    except Exception as exc:  # whatever failed, eager f ran on the same arguments
        failure = exc
    if backend is None:
        try:
            done = _attempt(f, FALLBACK_BACKEND, probe)
        except Exception as again:
            raise _compile_error(name, first, failure, again) from again
        why = (
            f"inductor could not compile {name} ({_short(failure, 200)}); its gradient was "
            f"compiled with backend='{FALLBACK_BACKEND}' instead, which checks AOTAutograd's "
            "forward and backward graphs but not inductor's generated code"
        )
        return Compiled(done.backend, why, done.seconds, done.graphs, done.result)
    raise _compile_error(name, first, failure) from failure


def _compile_error(
    name: str, backend: str, exc: BaseException, again: BaseException | None = None
) -> CompileError:
    tried = f"torch.compile({name}, backend='{backend}')"
    text = f"{tried} failed where eager {name} ran on the same arguments: {_short(exc)}."
    if again is not None:
        text += f" backend='{FALLBACK_BACKEND}' failed too: {_short(again)}."
    return CompileError(
        text + " The compiled gradient cannot be compared with eager's until it compiles: "
        "fix what torch.compile names (a torch.library op needs register_fake for "
        "compile; unsupported Python must sit outside the compiled region), or check the "
        "eager gradient alone with compiled=False."
    )
