"""The wheel-tag tables are packaging's own tag lists, held as the products they are: the
same tags, for every platform and Python pinbump checks."""

from __future__ import annotations

import pytest
from packaging import tags
from packaging.version import Version

from bot.core.config import KNOWN_PLATFORMS
from bot.core.environment import PYTHONS, Environment, platform_tags, tag_table
from bot.core.models import DistFile


@pytest.mark.parametrize("platform", KNOWN_PLATFORMS)
@pytest.mark.parametrize("python", PYTHONS)
def test_tag_table_is_packagings_tag_list(platform: str, python: str) -> None:
    version = tuple(int(x) for x in python.split("."))
    plats = platform_tags(platform)
    listed = {str(t) for t in tags.cpython_tags(version, platforms=plats)} | \
        {str(t) for t in tags.compatible_tags(version, platforms=plats)}
    table = tag_table(platform, python)
    assert table.expand() == listed
    for tag in sorted(listed)[::37]:
        assert table.fits(frozenset({tag}))
    others = {"cp39-cp39-musllinux_1_2_x86_64", "py2-none-any", "cp27-cp27mu-linux_x86_64",
              "cp315-abi3t-manylinux_2_28_x86_64", "pp310-pypy310_pp73-manylinux_2_28_x86_64"}
    for tag in others - listed:
        assert not table.fits(frozenset({tag}))


@pytest.mark.parametrize(("tag", "fits"), [
    ("cp39-abi3-manylinux_2_28_x86_64", True), ("cp313-cp313-manylinux_2_28_aarch64", True),
    ("py3-none-any", True), ("cp39-abi3-win_amd64", False),
    ("cp38-cp38-manylinux_2_17_x86_64", False), ("cp39-abi3-manylinux_2_41_x86_64", False),
])
def test_installable_reads_the_tables(tag: str, fits: bool) -> None:
    env = Environment.for_target(">=3.10", None, ("linux-x86_64", "linux-aarch64"))
    wheel = DistFile(filename=f"x-1.0-{tag}.whl", url="http://127.0.0.1/x.whl",
                     version=Version("1.0"), is_wheel=True, tags=frozenset({tag}))
    assert env.installable(wheel) is fits
