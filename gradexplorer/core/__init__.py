"""The bottom layer: nested structures, binding a call of f, and the guards.

Pure numpy; every other layer builds on it.
"""

from . import tree
from .calls import Call, bind_call, resolve_wrt
from .guards import guarded_call, keeping_random_state
from .outputs import OutputLayout, output_layout

__all__ = [
    "tree",
    "Call",
    "OutputLayout",
    "bind_call",
    "output_layout",
    "resolve_wrt",
    "guarded_call",
    "keeping_random_state",
]
