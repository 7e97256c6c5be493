"""Where is the bug: trace f, check each operation in context, name the culprit."""

from .localize import Localization, OpNode, locate

__all__ = ["locate", "Localization", "OpNode"]
