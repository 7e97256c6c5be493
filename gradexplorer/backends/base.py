"""The seam between gradexplorer and an AD system.

check/, fd/, locate/ and explorer/ never import an AD library: they ask a
backend (:func:`gradexplorer.backends.get_backend`) for what they need. A
backend is a module (or any object) with these members:

``name``
    ``"autograd"``, ``"torch"``, ``"jax"`` (for messages only: code outside
    ``backends/`` asks ``capabilities``, never the name).
``capabilities``
    A :class:`Capabilities`: what the system can do.
``np``
    The array namespace used *inside* a traced function: ``reshape``,
    ``ravel``, ``concatenate``, ``real``, ``imag`` on the system's arrays.
``owns(x) -> bool``
    Whether x is one of this system's arrays (to recognise it from arguments).
``to_array(a) / to_numpy(x)``
    Plain numpy to the system's array type (to evaluate f) and back.
``vjp(F, leaves) -> trace``
    Run ``F(*leaves)`` once, recording it; ``trace.value``, ``trace.backward(g)``
    (one cotangent per leaf, zeros where disconnected), ``trace.connected``.
    The backward pass must itself be traceable (second derivatives).
``jvp(F, leaves, tangents, fallback=False) -> (value, tangent, ops_without_jvp)``
    Forward mode; with ``fallback`` an operation without a JVP rule takes its
    tangent from its VJP and is named in the third result.
``value(x) / is_traced(x)``
    The plain value under a traced one; whether x is traced.
``container(kind, children, keys, cls)``
    The system's own container holding traced children, or None for Python's.
``record(F, leaves) -> list[OpRecord]``
    The primitives F applies to the leaves, in evaluation order.
``op_vjp(rec, u) / op_jvp(rec, tangents) / op_eval(rec, args)``
    One recorded operation's own VJP, JVP, and evaluation on new arguments.
``definition_site(rec) -> (path, line) | None``
    Where the operation's own code is defined (the ``def`` line; None for a
    library's): the site shown when f itself is the operation.
``rule_site(rec, kind) -> (path, line) | None`` (optional)
    Where the user wrote its ``"VJP"`` / ``"JVP"`` rule (the function given to
    ``defvjp``, a Function's ``backward``, a ``custom_vjp``'s bwd).
``op_function(rec, slot) -> g``
    The operation as a function of its argument ``slot`` alone, on the
    system's own arrays (to check the culprit's Jacobian entry by entry).
``float_kind(x)``
    ``"real"``/``"complex"`` for a leaf this system differentiates, else why not.
``prepare(f, args, kwargs, wrt, precision) -> Prepared``
    The call as it is checked: in float64 unless ``precision="native"``
    (torch and jax promote lower precisions; numpy keeps its own unless
    ``precision="float64"``), a torch ``nn.Module`` as a function of its
    named parameters.
``cast(x, dtype_name)``
    x as the system's array of that dtype (``"bfloat16"`` where it has one).
``session(precision)``
    A context manager around a whole check (jax's 64-bit mode; torch's
    default dtype while f runs).
"""

from __future__ import annotations

import inspect
import os
import sys
import sysconfig
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

__all__ = [
    "Backend", "Capabilities", "OpRecord", "Prepared", "user_frames", "user_stack",
    "is_library_path",
    "source_site", "promote_arguments", "promotion_note", "PACKAGE_DIR",
]  # fmt: skip

#: The precisions a check may run in: None is each system's default.
PRECISIONS = (None, "float64", "native")

#: gradexplorer's own folder: its frames are not the user's code (the gallery's are).
PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_GALLERY_DIR = os.path.join(PACKAGE_DIR, "gallery")


@dataclass(frozen=True)
class Capabilities:
    """What an AD system can do, asked by the layers above instead of its name.

    >>> Capabilities(numpy_arrays=True, eager_record=True, operators=True).devices
    False
    """

    #: f takes plain numpy arrays as they are (no conversion at the seam)
    numpy_arrays: bool = False
    #: ``record`` runs f eagerly, so its output on a (complex) point is concrete
    eager_record: bool = False
    #: gradexplorer's operators (grad, jacobian, hessian, hvp, Lop, Rop ...) take its functions
    operators: bool = False
    #: its arrays may live on an accelerator; f is evaluated where its inputs are
    devices: bool = False
    #: it can map f over a leading batch axis (``vmap``)
    batching: bool = False
    #: it compiles f (``compile_function``: torch.compile), so a compiled gradient
    #: can be checked beside the eager one
    compiling: bool = False
    #: it has registered custom operators with a checker of their registration
    #: (``custom_op_calls`` and ``opcheck``: torch.library)
    custom_ops: bool = False
    #: float32 matmuls may run in a reduced precision on its devices (TF32), which it
    #: names (``reduced_matmuls(leaves)``) and can switch off (``full_float32()``)
    matmul_modes: bool = False


@dataclass
class OpRecord:
    """One traced operation: what ran, on what, called from where."""

    index: int
    fun: Any
    args: tuple
    kwargs: dict
    argnums: tuple  # positions of the traced (differentiated) arguments
    parents: tuple  # indices of the records those arguments came from
    value: Any
    frames: tuple  # (path, line) of the user's stack, innermost first
    name: str = ""
    #: ``(name, serial)`` of the library function the user's line called when the
    #: operation ran inside it (``stack`` for autograd's arrays and getitems of
    #: ``anp.stack``), or ``()``: the operations of one call share its serial.
    call: tuple = ()
    #: per argument (position, or keyword) whose leaves are not all alike: whether
    #: each of its leaves is traced (``torch.cat([a, b.detach()])``: (True, False));
    #: otherwise the positions in ``argnums`` are traced whole, the rest not at all
    leaves_traced: dict = field(default_factory=dict, repr=False)


@dataclass(frozen=True)
class Prepared:
    """A call ready to bind: f, its arguments and ``wrt`` after promotion."""

    f: Any
    args: tuple
    kwargs: dict
    wrt: Any
    notes: tuple = ()


def promote_arguments(f: Any, args: tuple, kwargs: dict, widen: Any) -> tuple[tuple, dict, list]:
    """Every leaf of f's arguments through ``widen(x) -> (new, old_dtype | None)``;
    returns the new arguments and ``(label, old_dtype)`` of each leaf widened,
    labelled by path (``params['W']``)."""
    from ..core.calls import param_label
    from ..core.tree import flatten, path_str, unflatten

    seen: list = []

    def walk(value: Any, name: str) -> Any:
        leaves, tree = flatten(value)
        out = []
        for leaf, path in zip(leaves, tree.paths()):
            new, old = widen(leaf)
            if old is not None:
                seen.append((name + path_str(path), old))
            out.append(new)
        return unflatten(tree, out)

    named = getattr(f, "forward", f)  # a torch module: its forward's parameter names
    args = tuple(walk(a, param_label(named, i)) for i, a in enumerate(args))
    kwargs = {k: walk(v, k) for k, v in kwargs.items()}
    return args, kwargs, seen


def promotion_note(seen: list) -> str:
    """Say which inputs were promoted to float64, and how to check them as they are."""
    named = ", ".join(f"{label} ({dtype})" for label, dtype in seen[:6])
    more = f" and {len(seen) - 6} more" if len(seen) > 6 else ""
    low = sorted({d for _, d in seen})
    return (
        f"checked in float64: {named}{more} promoted on copies. gx.check_precision judges "
        f"the {'/'.join(low)} gradient itself against float64; precision='native' checks "
        "it with finite differences in its own precision."
    )


@runtime_checkable
class Backend(Protocol):
    name: str
    np: Any
    capabilities: Capabilities

    def owns(self, x: Any) -> bool: ...
    def to_array(self, a: Any) -> Any: ...
    def to_numpy(self, x: Any) -> Any: ...
    def vjp(self, F: Any, leaves: Any) -> Any: ...
    def jvp(self, F: Any, leaves: Any, tangents: Any, fallback: bool = False) -> Any: ...
    def value(self, x: Any) -> Any: ...
    def is_traced(self, x: Any) -> bool: ...
    def container(self, kind: str, children: list, keys: tuple, cls: Any) -> Any: ...
    def record(self, F: Any, leaves: Any) -> list[OpRecord]: ...
    def op_vjp(self, rec: OpRecord, u: Any) -> list: ...
    def op_jvp(self, rec: OpRecord, tangents: Any) -> Any: ...
    def op_eval(self, rec: OpRecord, args: Any) -> Any: ...
    def definition_site(self, rec: OpRecord) -> tuple[str, int] | None: ...
    def op_function(self, rec: OpRecord, slot: int) -> Any: ...
    def float_kind(self, x: Any) -> str: ...
    def prepare(self, f: Any, args: tuple, kwargs: dict, wrt: Any, precision: Any) -> Prepared: ...
    def session(self, precision: Any = None) -> Any: ...
    def cast(self, x: Any, dtype: str) -> Any: ...


def _installed_roots() -> tuple[str, ...]:
    """Folders of the standard library and of installed packages."""
    names = ("stdlib", "platstdlib", "purelib", "platlib")
    paths = sysconfig.get_paths()
    roots = {os.path.abspath(paths[k]) for k in names if paths.get(k)}
    roots.add(os.path.dirname(os.path.abspath(os.__file__)))  # the stdlib, even in a venv
    return tuple(sorted(r + os.sep for r in roots))


_INSTALLED = _installed_roots()
_PACKAGE_FOLDERS = ("site-packages", "dist-packages")


def is_library_path(path: str, library_dirs: tuple[str, ...] = ()) -> bool:
    """Whether code at ``path`` is a library's rather than the user's.

    Parameters
    ----------
    path : str
        A code object's ``co_filename``.
    library_dirs : tuple of str
        The AD system's own folders (numpy's too), left out wherever they are.

    Returns
    -------
    bool
        True for the given folders, gradexplorer itself (not its gallery, which
        is example user code), the standard library, anything installed in a
        ``site-packages`` / ``dist-packages`` folder (traitlets, ipywidgets,
        functools' wrappers ...) and Python's frozen modules. A notebook cell's
        code (``/tmp/ipykernel_1/123.py``, ``<ipython-input-3-...>``) is user code.

    Examples
    --------
    >>> import functools
    >>> is_library_path(functools.__file__), is_library_path("/home/me/model.py")
    (True, False)
    >>> is_library_path("/opt/env/lib/python3.12/site-packages/traitlets/traitlets.py")
    True
    """
    if path.startswith("<"):
        return path.startswith("<frozen")
    if library_dirs and path.startswith(library_dirs):
        return True
    if path.startswith(PACKAGE_DIR + os.sep):
        return not path.startswith(_GALLERY_DIR + os.sep)
    if path.startswith(_INSTALLED):
        return True
    parts = path.replace("\\", "/").split("/")
    return any(p in _PACKAGE_FOLDERS for p in parts[:-1])


#: Names of library functions that only forward to the operation (not what the user called).
_FORWARDERS = {"f_wrapped", "wrapper", "wrapped", "inner", "__call__", "apply", "<lambda>"}


def user_stack(
    library_dirs: tuple[str, ...], stop: Any, skip: int = 2, calls: dict | None = None
) -> tuple[tuple, tuple]:
    """The user's frames of the running operation and the library call it is part of.

    Parameters
    ----------
    library_dirs : tuple of str
        The AD system's folders (see :func:`is_library_path`).
    stop : frame
        The tracer's own frame: the stack above it is not f's.
    skip : int
        Frames of the recorder itself, innermost, to leave out.
    calls : dict, optional
        The recording's registry of library calls (``id(frame) -> (frame,
        serial)``); it keeps their frames alive while recording, so that two
        calls never share an id. Without it no call is reported.

    Returns
    -------
    frames : tuple
        ``(path, line)`` of the user's frames between the operation and
        ``stop``, innermost first; libraries, the standard library and
        gradexplorer's own are left out.
    call : tuple
        ``(name, serial)`` of the library function the innermost user frame
        called, when that function is not the operation itself (``stack``,
        ``array``, ``norm``), else ``()``.
    """
    out = []
    entry = None  # the outermost library frame seen since the last user frame
    frame = sys._getframe(skip)
    while frame is not None and frame is not stop:
        path = frame.f_code.co_filename
        if is_library_path(path, library_dirs):
            if not out:
                entry = frame
        else:
            out.append((path, frame.f_lineno))
        frame = frame.f_back
    call: tuple = ()
    if entry is not None and calls is not None and out:
        name = entry.f_code.co_name
        if name not in _FORWARDERS and not name.startswith("_"):
            known = calls.get(id(entry))
            if known is None or known[0] is not entry:
                known = calls[id(entry)] = (entry, len(calls))
            call = (name, known[1])
    return tuple(out), call


def user_frames(library_dirs: tuple[str, ...], stop: Any, skip: int = 2) -> tuple:
    """``(path, line)`` of the frames between an operation's call and the tracer
    (``stop``), innermost first, leaving out libraries (see :func:`is_library_path`)."""
    return user_stack(library_dirs, stop, skip + 1)[0]


def source_site(obj: Any, library_dirs: tuple[str, ...] = ()) -> tuple[str, int] | None:
    """Where a function (or class) of the user's is defined: ``(path, line of its def)``.

    Decorators are unwrapped (``__wrapped__``) and skipped (the line is the
    ``def``'s, not the ``@primitive`` above it); None for library code, or
    when the source cannot be found (a builtin, code typed at a bare prompt).

    Examples
    --------
    >>> from gradexplorer.gallery.examples import _sm
    >>> path, line = source_site(_sm)
    >>> path.endswith("examples.py"), line > 1
    (True, True)
    >>> source_site(sum) is None, source_site(source_site) is None  # builtin; a library's
    (True, True)
    """
    target = inspect.unwrap(obj) if callable(obj) else obj
    try:
        path = inspect.getsourcefile(target)
        lines, line = inspect.getsourcelines(target)
    except (TypeError, OSError):
        return None
    if not path or is_library_path(path, library_dirs):
        return None
    for k, text in enumerate(lines):  # the def itself, below its decorators
        if text.lstrip().startswith(("def ", "async def ", "class ")):
            return path, line + k
    return path, line
