"""The dense channel: an index interface, and the exact scan behind it (an ANN index comes next)."""

from .base import DenseIndex
from .exact import ExactDenseIndex

__all__ = ["DenseIndex", "ExactDenseIndex"]
