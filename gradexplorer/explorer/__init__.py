"""The live explorer (ipywidgets): ``explore(f, *args)``."""

from .explorer import Explorer, explore

__all__ = ["explore", "Explorer"]
