"""pinbump: dependency policy for tightly coupled GPU-kernel stacks."""

__version__ = "0.1.0"
