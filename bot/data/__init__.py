"""Data shipped with pinbump: the built-in group's index model and its advisories."""
