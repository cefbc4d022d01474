"""Utilities (an excerpt in the shape of sglang/srt/utils/common.py)."""

from importlib.metadata import PackageNotFoundError, version

from packaging.version import parse


def assert_pkg_version(pkg: str, min_version: str, message: str) -> None:
    """Assert that an installed package is at least a given version.

    Args:
        pkg: Distribution name, e.g. "flashinfer_python".
        min_version: Minimum version required (e.g., "0.6.8.post1").
        message: What to tell the user when the check fails.
    """
    try:
        installed = version(pkg)
    except PackageNotFoundError:
        raise RuntimeError(f"{pkg} is not installed. {message}") from None
    if parse(installed) < parse(min_version):
        raise RuntimeError(f"{pkg} {installed} is older than {min_version}. {message}")
