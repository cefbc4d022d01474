"""The requirement and literal editors on pins found by discovery in realistic files: only
the version moves, a file that changed since it was read is an error naming the line, and the
edited file is read back before anything is written."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.core.discovery import find_pins, parse_requirements
from bot.core.edits import FileEdit, edit_literals, edit_requirements, validate_requirements
from bot.core.models import Pin
from bot.errors import ApplyError, InputError

NAMES = {"flashinfer-python", "flashinfer-cubin", "nvidia-cutlass-dsl"}


def found(path: str, text: str) -> list[Pin]:
    return list(find_pins(Path("."), {path: text}, NAMES, lead="flashinfer-python").pins)


@pytest.mark.parametrize(("path", "before", "after", "kinds"), [
    ("docker/Dockerfile",
     "ARG FLASHINFER_VERSION=0.6.8.post1\n"
     "RUN pip install flashinfer-python==${FLASHINFER_VERSION}\n",
     "ARG FLASHINFER_VERSION=0.6.11\nRUN pip install flashinfer-python==${FLASHINFER_VERSION}\n",
     ["dockerfile-arg"]),
    ("scripts/ci_install.sh",
     "#!/bin/bash\nFLASHINFER_VERSION=0.6.8.post1  # the last good one\n"
     "git clone --branch v0.6.8.post1 https://github.com/flashinfer-ai/flashinfer\n",
     "#!/bin/bash\nFLASHINFER_VERSION=0.6.11  # the last good one\n"
     "git clone --branch v0.6.11 https://github.com/flashinfer-ai/flashinfer\n",
     ["literal", "literal"]),
    # another variable of the line holds the same version: only the pin's own value moves
    ("ci/env.sh", "TAG=0.6.8.post1; export FLASHINFER_VERSION=0.6.8.post1 CUDA=0.6.8.post1\n",
     "TAG=0.6.8.post1; export FLASHINFER_VERSION=0.6.11 CUDA=0.6.8.post1\n", ["literal"]),
    ("ci/default.sh", 'X=0.6.8.post1 FLASHINFER_VERSION="${FLASHINFER_VERSION:-v0.6.8.post1}"\n',
     'X=0.6.8.post1 FLASHINFER_VERSION="${FLASHINFER_VERSION:-v0.6.11}"\n', ["literal"]),
    ("versions.json", '{\n  "FLASHINFER_VERSION": "0.6.8.post1"\n}\n',
     '{\n  "FLASHINFER_VERSION": "0.6.11"\n}\n', ["literal"]),
    ("requirements.txt",
     "-e git+https://github.com/flashinfer-ai/flashinfer@v0.6.8.post1#egg=flashinfer-python\n",
     "-e git+https://github.com/flashinfer-ai/flashinfer@v0.6.11#egg=flashinfer-python\n",
     ["literal"]),
])
def test_a_literal_moves_alone(path: str, before: str, after: str, kinds: list[str]) -> None:
    pins = found(path, before)
    edit = edit_literals(path, before, [(p, "0.6.11") for p in pins])
    assert (edit.path, edit.old, edit.new) == (path, before, after)
    assert [e.kind for e in edit.edits] == kinds
    assert [(e.file, e.line, e.before, e.after) for e in edit.edits] == [
        (path, p.line, before.splitlines()[p.line - 1].strip(),
         after.splitlines()[p.line - 1].strip()) for p in pins]
    # a second pass finds the new version where the old was: nothing to do, no error
    again = edit_literals(path, after, [(p, "0.6.11") for p in pins])
    assert (again.new, again.edits) == (after, [])


@pytest.mark.parametrize(("now", "message"), [
    # the line is gone
    ("#!/bin/bash\n", "ci.sh:2: line not found; the file changed since it was read? Nothing "
     "written"),
    # the line holds neither the old version nor the new one
    ("#!/bin/bash\nFLASHINFER_VERSION=0.6.9\n", "ci.sh:2: cannot find '0.6.8.post1' to edit; "
     "the file changed since it was read? Nothing written"),
    # a longer version is not the old one
    ("#!/bin/bash\nFLASHINFER_VERSION=0.6.8.post10\n", "ci.sh:2: cannot find '0.6.8.post1'"),
])
def test_a_literal_that_changed_since_it_was_read(now: str, message: str) -> None:
    [pin] = found("ci.sh", "#!/bin/bash\nFLASHINFER_VERSION=0.6.8.post1\n")
    with pytest.raises(ApplyError) as err:
        edit_literals("ci.sh", now, [(pin, "0.6.11")])
    assert str(err.value).startswith(message)


def test_a_literal_already_moved_does_not_stop_the_next() -> None:
    before = ("#!/bin/bash\nFLASHINFER_VERSION=0.6.8.post1  # 0.6.8.post1 was the last good one\n"
              "git clone --branch v0.6.8.post1 https://github.com/flashinfer-ai/flashinfer\n")
    pins = found("ci.sh", before)
    assert [p.line for p in pins] == [3, 2]
    half = before.replace("v0.6.8.post1", "v0.6.11")  # a killed apply wrote line 3 only
    edit = edit_literals("ci.sh", half, [(p, "0.6.11") for p in pins])
    assert edit.new == half.replace("VERSION=0.6.8.post1", "VERSION=0.6.11")
    assert "# 0.6.8.post1 was the last good one" in edit.new  # only the value moves
    assert [e.line for e in edit.edits] == [2]


def test_a_literal_pin_on_line_zero_is_not_read_from_the_end() -> None:
    [pin] = found("ci.sh", "FLASHINFER_VERSION=0.6.8.post1\n")
    moved = Pin(pin.package, pin.requirement, pin.file, 0, pin.section, pin.kind, pin.literal)
    with pytest.raises(ApplyError, match=r"^ci\.sh:0: line not found"):
        edit_literals("ci.sh", "FLASHINFER_VERSION=0.6.8.post1\n", [(moved, "0.6.11")])


def reqs(text: str) -> list[Pin]:
    return parse_requirements(text, "requirements.txt", NAMES)


@pytest.mark.parametrize(("before", "specs", "after"), [
    # extras, markers and comments stay; only the specifier moves
    ("flashinfer-python[jit]==0.6.8.post1 ; python_version >= '3.10'  # pinned\n",
     ["==0.6.11"], "flashinfer-python[jit]==0.6.11 ; python_version >= '3.10'  # pinned\n"),
    # a compatible-release pin on the first line
    ("nvidia-cutlass-dsl~=4.4.2\n", ["~=4.5.0"], "nvidia-cutlass-dsl~=4.5.0\n"),
    # the pin moves, a comment repeating it does not
    ("flashinfer-cubin==0.6.8.post1  # as flashinfer-cubin==0.6.8.post1 in docker/\n",
     ["==0.6.11"], "flashinfer-cubin==0.6.11  # as flashinfer-cubin==0.6.8.post1 in docker/\n"),
    # continued on its first line; an earlier pin at the same version is another package's
    ("nvidia-cutlass-dsl>=4.4.2 \\\n    ; python_version >= '3.10'\n", [">=4.5.0"],
     "nvidia-cutlass-dsl>=4.5.0 \\\n    ; python_version >= '3.10'\n"),
    ("quack-kernels==4.4.2\nnvidia-cutlass-dsl \\\n    ==4.4.2  # was ==4.4.2\n", ["==4.5.0"],
     "quack-kernels==4.4.2\nnvidia-cutlass-dsl \\\n    ==4.5.0  # was ==4.4.2\n"),
    # a target's own upper bound survives the bump
    ("nvidia-cutlass-dsl>=4.4.2,<5\n", [">=4.5.0,<5"], "nvidia-cutlass-dsl>=4.5.0,<5\n"),
    # the version on the second line of a continued requirement, then a pin after it
    ("nvidia-cutlass-dsl \\\n    [cu13] \\\n    ==4.4.2  # pinned\nflashinfer-cubin==0.6.8.post1\n",
     ["==4.5.0", "==0.6.11"],
     "nvidia-cutlass-dsl \\\n    [cu13] \\\n    ==4.5.0  # pinned\nflashinfer-cubin==0.6.11\n"),
    # the first matching version after the pin's line, not a longer one before it
    ("nvidia-cutlass-dsl \\\n    >=4.4.2 ; python_version >= '4.4.2'\n", [">=4.5.0"],
     "nvidia-cutlass-dsl \\\n    >=4.5.0 ; python_version >= '4.4.2'\n"),
])
def test_a_requirement_moves_its_version_only(before: str, specs: list[str], after: str) -> None:
    pins = reqs(before)
    edit = edit_requirements("requirements.txt", before, list(zip(pins, specs, strict=True)))
    assert (edit.path, edit.old, edit.new) == ("requirements.txt", before, after)
    assert [(e.file, e.kind) for e in edit.edits] == [("requirements.txt", "requirement")] * \
        len(specs)
    assert [e.before for e in edit.edits] == [before.splitlines()[e.line - 1].strip()
                                              for e in edit.edits]
    assert [e.after for e in edit.edits] == [after.splitlines()[e.line - 1].strip()
                                             for e in edit.edits]


def test_a_continued_requirement_edits_the_line_holding_its_version() -> None:
    before = "nvidia-cutlass-dsl \\\n    [cu13] \\\n    ==4.4.2  # pinned\n"
    [pin] = reqs(before)
    [edit] = edit_requirements("requirements.txt", before, [(pin, "==4.5.0")]).edits
    assert (edit.line, edit.before, edit.after) == (3, "==4.4.2  # pinned", "==4.5.0  # pinned")


@pytest.mark.parametrize(("now", "line"), [
    # the pin's version changed by hand
    ("flashinfer-cubin==0.6.9\n", 1),
    # the file shrank: the pin's line is past its end
    ("", 1),
    # a longer version is not the pin's
    ("flashinfer-cubin \\\n    ==0.6.8.post10\n", 1),
])
def test_a_requirement_that_changed_since_it_was_read(now: str, line: int) -> None:
    [pin] = reqs("flashinfer-cubin \\\n    ==0.6.8.post1\n")
    with pytest.raises(ApplyError) as err:
        edit_requirements("requirements.txt", now, [(pin, "==0.6.11")])
    assert str(err.value) == (f"requirements.txt:{line}: cannot find {pin.requirement!r} to "
                              "edit; the file changed since it was read?")
    assert pin.requirement.startswith("flashinfer-cubin") and pin.line == line


def test_a_continued_version_is_looked_for_within_twenty_lines() -> None:
    far = "nvidia-cutlass-dsl \\\n" + "    \\\n" * 18 + "    ==4.4.2\n"
    [pin] = reqs(far)
    assert edit_requirements("requirements.txt", far, [(pin, "==4.5.0")]).new == \
        far.replace("4.4.2", "4.5.0")
    too_far = "nvidia-cutlass-dsl \\\n" + "    \\\n" * 19 + "    ==4.4.2\n"
    [pin] = reqs(too_far)
    with pytest.raises(ApplyError, match="cannot find"):
        edit_requirements("requirements.txt", too_far, [(pin, "==4.5.0")])


@pytest.mark.parametrize(("path", "before", "after"), [
    ("pyproject.toml", '[project]\ndependencies = ["flashinfer-python==0.6.8.post1"]\n',
     '[project]\ndependencies = ["flashinfer-python==0.6.11"]\n'),
    ("requirements/gpu.txt", "flashinfer-python==0.6.8.post1\n", "flashinfer-python==0.6.11\n"),
    ("setup.py", "from setuptools import setup\n"
     "setup(name='x', install_requires=['flashinfer-python==0.6.8.post1'])\n",
     "from setuptools import setup\n"
     "setup(name='x', install_requires=['flashinfer-python==0.6.11'])\n"),
    ("setup.cfg", "[options]\ninstall_requires =\n    flashinfer-python==0.6.8.post1\n",
     "[options]\ninstall_requires =\n    flashinfer-python==0.6.11\n"),
    ("setup.cfg", "[options]\ninstall_requires = flashinfer-python==0.6.8.post1\n",
     "[options]\ninstall_requires = flashinfer-python==0.6.11\n"),
])
def test_an_edited_file_is_read_back(path: str, before: str, after: str) -> None:
    expected = {("flashinfer-python", "==0.6.11"): "flashinfer-python==0.6.11"}
    validate_requirements(FileEdit(path, before, after), NAMES, expected)
    # an edit that lost the pin (here: the old text written back) is refused
    with pytest.raises(ApplyError) as err:
        validate_requirements(FileEdit(path, before, before), NAMES, expected)
    assert str(err.value) == (f"{path}: after editing, 'flashinfer-python==0.6.11' is not "
                              "found; nothing written")


def test_an_edit_that_breaks_the_toml_names_the_file() -> None:
    broken = '[project]\ndependencies = ["flashinfer-python==0.6.11"\n'
    edit = FileEdit("pyproject.toml", "", broken)
    with pytest.raises(InputError, match=r"^pyproject\.toml"):
        validate_requirements(edit, NAMES, {})


def test_an_edit_that_breaks_a_requirement_names_the_file_and_line() -> None:
    broken = "flashinfer-python==0.6.11 ; python_version >>> '3'\n"
    edit = FileEdit("requirements/gpu.txt", "", broken)
    with pytest.raises(InputError, match=r"^requirements/gpu\.txt:1: invalid requirement"):
        validate_requirements(edit, NAMES, {})


def test_a_specifier_is_compared_without_surrounding_space() -> None:
    edit = FileEdit("requirements.txt", "", "flashinfer-python== 0.6.11\n")
    validate_requirements(edit, NAMES, {("flashinfer-python", " == 0.6.11 "):
                                        "flashinfer-python== 0.6.11"})
