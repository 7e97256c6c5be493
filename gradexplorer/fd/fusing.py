"""One program for a reduction over device samples, where the device asks for it.

The finite-difference reductions (:func:`~gradexplorer.fd.schemes.combine`, the
noise floor, the staircase grid...) are written once against an array namespace
``xp``: numpy on the host, a framework's on a device. jax on an accelerator runs
each eager operation as a program compiled once per shape (~0.1-0.3 s each on a
GPU), so a reduction of a dozen operations over samples of a new shape costs a
dozen compilations. Its namespace then carries ``fuse(fn)``, which compiles fn
whole; :func:`fusable` routes a reduction through it (one program per shape),
and leaves it as it is everywhere else.

>>> import numpy as onp
>>> @fusable("scale")
... def scaled_sum(a, scale, xp=onp):
...     return xp.sum(a) * scale
>>> float(scaled_sum(onp.arange(4.0), 2.0))
12.0
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Any

import numpy as onp

__all__ = ["fusable"]


def fusable(*static: str) -> Callable[[Callable], Callable]:
    """Run the decorated ``fn(..., xp=...)`` as one program where ``xp.fuse`` exists.

    Parameters
    ----------
    *static : str
        Arguments that are not arrays (a scheme, a flag): they key the program,
        one per distinct value, and must be hashable.

    Every other argument is an array (or None, or a Python number) of the
    program; fn may return arrays, tuples of them or a dataclass of them.
    """

    def decorate(fn: Callable) -> Callable:
        signature = inspect.signature(fn)
        programs: dict = {}

        @functools.wraps(fn)
        def run(*args: Any, **kwargs: Any) -> Any:
            bound = signature.bind(*args, **kwargs)
            bound.apply_defaults()
            xp = bound.arguments["xp"]
            fuse = getattr(xp, "fuse", None)
            if fuse is None or xp is onp:
                return fn(*args, **kwargs)
            fixed = {name: bound.arguments[name] for name in static}
            key = (id(xp), tuple(fixed.values()))
            program = programs.get(key)
            if program is None:
                program = programs[key] = fuse(functools.partial(fn, xp=xp, **fixed))
            arrays = {
                name: value
                for name, value in bound.arguments.items()
                if name != "xp" and name not in fixed
            }
            return program(**arrays)

        return run

    return decorate
