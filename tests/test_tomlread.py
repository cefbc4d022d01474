"""Read-only TOML: the standard library's parser, tomlkit's words for malformed files, and
each string value's lines however it is quoted (the pins' file:line)."""

from __future__ import annotations

import pytest

from bot.core import tomlread
from bot.core.discovery import load_toml, parse_pyproject
from bot.errors import InputError

TEXT = '''[project]
dependencies = [
  "flashinfer-python==0.6.8",
  'flashinfer-cubin==0.6.8',
  "quack-kernels>=0.3 ; python_version >= \\"3.10\\"",
  """nvidia-cutlass-dsl==4.4.2""",
  \'\'\'
torch\'\'\',
  "flashinfer-python==0.6.8",
]
'''


def test_each_string_value_has_its_lines_however_it_is_written() -> None:
    lines = tomlread.string_lines(TEXT)
    assert lines["flashinfer-python==0.6.8"] == [3, 9]
    assert lines["flashinfer-cubin==0.6.8"] == [4]
    assert lines['quack-kernels>=0.3 ; python_version >= "3.10"'] == [5]
    assert lines["nvidia-cutlass-dsl==4.4.2"] == [6]
    assert lines["torch"] == [7]
    assert "dependencies" not in lines  # a bare key is no string literal


def test_pins_keep_their_lines() -> None:
    names = {"flashinfer-python", "flashinfer-cubin", "quack-kernels", "nvidia-cutlass-dsl"}
    found = {(p.package, p.line) for p in parse_pyproject(TEXT, "pyproject.toml", names).pins}
    assert found == {("flashinfer-python", 3), ("flashinfer-cubin", 4), ("quack-kernels", 5),
                     ("nvidia-cutlass-dsl", 6), ("flashinfer-python", 9)}


@pytest.mark.parametrize("text", ['[project\nname = "x"\n', 'a = 1\na = 2\n', 'a = "open\n'])
def test_malformed_toml_is_one_line_naming_file_and_line(text: str) -> None:
    with pytest.raises(InputError, match=r"^pyproject.toml:\d+: malformed TOML: .+ \(column "
                                         r"\d+\)$"):
        load_toml(text, "pyproject.toml")


def test_values_are_plain() -> None:
    doc = load_toml(TEXT, "pyproject.toml")
    assert doc == {"project": {"dependencies": [
        "flashinfer-python==0.6.8", "flashinfer-cubin==0.6.8",
        'quack-kernels>=0.3 ; python_version >= "3.10"', "nvidia-cutlass-dsl==4.4.2",
        "torch", "flashinfer-python==0.6.8"]}}
