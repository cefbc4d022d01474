"""Table-driven tests of apply's pure editors."""

from __future__ import annotations

import pytest

from bot.core.discovery import parse_pyproject, parse_requirements
from bot.core.edits import (
    BUILTIN_DOC_PATTERNS,
    Bump,
    dockerfile_args,
    edit_assertions,
    edit_dockerfile,
    edit_docs,
    edit_requirements,
    left_unchanged,
    literal_pattern,
    validate_dockerfile,
    version_pattern,
)
from bot.errors import ApplyError, DockerfileConflict, InputError

LEAD = Bump("flashinfer-python", frozenset({"0.6.8.post1"}), "0.6.11")
BUMPS = [
    LEAD,
    Bump("flashinfer-cubin", frozenset({"0.6.8.post1"}), "0.6.11"),
    Bump("flashinfer-jit-cache", frozenset({"0.6.8.post1"}), "0.6.11"),
    Bump("nvidia-cutlass-dsl", frozenset({"4.4.2"}), "4.5.0"),
]
NAMES = {"flashinfer-python", "flashinfer-cubin", "nvidia-cutlass-dsl", "quack-kernels"}


@pytest.mark.parametrize(("before", "after", "kinds"), [
    ("ARG FLASHINFER_VERSION=0.6.8.post1\n", "ARG FLASHINFER_VERSION=0.6.11\n",
     ["dockerfile-arg"]),
    ('ARG FLASHINFER_VERSION="0.6.8.post1"\n', 'ARG FLASHINFER_VERSION="0.6.11"\n',
     ["dockerfile-arg"]),
    ("ENV FI_VER=0.6.8.post1 CUTLASS_VER=4.4.2\nRUN pip install flashinfer-python==$FI_VER\n",
     "ENV FI_VER=0.6.11 CUTLASS_VER=4.5.0\nRUN pip install flashinfer-python==$FI_VER\n",
     ["dockerfile-arg"]),
    ('ARG FI="0.6.8.post1"\nRUN pip install "flashinfer-cubin==${FI}" x\n',
     'ARG FI="0.6.11"\nRUN pip install "flashinfer-cubin==${FI}" x\n', ["dockerfile-arg"]),
    ("FROM base AS b\nARG FLASHINFER_VERSION\n", "FROM base AS b\nARG FLASHINFER_VERSION\n", []),
    ("RUN pip install flashinfer-cubin==0.6.8.post1 \\\n"
     "    nvidia_cutlass_dsl[cu13]==4.4.2 other==0.6.8.post1\n",
     "RUN pip install flashinfer-cubin==0.6.11 \\\n"
     "    nvidia_cutlass_dsl[cu13]==4.5.0 other==0.6.8.post1\n",
     ["dockerfile-run", "dockerfile-run"]),
    ("RUN pip install flashinfer-jit-cache==${FLASHINFER_VERSION}\n",
     "RUN pip install flashinfer-jit-cache==${FLASHINFER_VERSION}\n", []),
    ("ARG FLASHINFER_VERSION=0.6.8.post10\n", "ARG FLASHINFER_VERSION=0.6.8.post10\n", []),
    ("# ARG FLASHINFER_VERSION=0.6.8.post1 in a comment\n",
     "# ARG FLASHINFER_VERSION=0.6.8.post1 in a comment\n", []),
    ("ARG FLASHINFER_VERSION=0.6.8.post1\r\nRUN echo hi\r\n",
     "ARG FLASHINFER_VERSION=0.6.11\r\nRUN echo hi\r\n", ["dockerfile-arg"]),
])
def test_dockerfile(before: str, after: str, kinds: list[str]) -> None:
    edit, notes = edit_dockerfile("docker/Dockerfile", before, BUMPS)
    assert edit.new == after
    assert [e.kind for e in edit.edits] == kinds
    assert notes == []
    validate_dockerfile(edit, BUMPS)


def test_dockerfile_conflicting_defaults() -> None:
    text = ("ARG FLASHINFER_VERSION=0.6.8.post1\nFROM a AS one\n"
            "ARG FLASHINFER_VERSION=0.6.7\n")
    with pytest.raises(DockerfileConflict) as err:
        edit_dockerfile("docker/Dockerfile", text, BUMPS)
    assert str(err.value).startswith(
        "docker/Dockerfile: ARG FLASHINFER_VERSION has different defaults in one file: "
        "line 1 (0.6.8.post1), line 3 (0.6.7)")


def test_dockerfile_unrelated_args_may_differ() -> None:
    text = "ARG CUDA_VERSION=12.9.1\nFROM a\nARG CUDA_VERSION=13.0.0\n"
    edit, _ = edit_dockerfile("Dockerfile", text, BUMPS)
    assert edit.new == text


def test_dockerfile_ambiguous_value_is_a_note() -> None:
    bumps = [Bump("a-pkg", frozenset({"1.0"}), "1.1"), Bump("b-pkg", frozenset({"1.0"}), "2.0")]
    edit, notes = edit_dockerfile("Dockerfile", "ARG SOME_VERSION=1.0\nARG B_PKG_VERSION=1.0\n",
                                  bumps)
    assert edit.new == "ARG SOME_VERSION=1.0\nARG B_PKG_VERSION=2.0\n"
    assert notes == ["Dockerfile:1: ARG SOME_VERSION=1.0 left unchanged: its name and use tie "
                     "it to no package of the group (it equals the old version of a-pkg, "
                     "b-pkg); name it under [dockerfile-args] in the config if it is one"]


@pytest.mark.parametrize(("text", "configured", "edited", "note"), [
    # issue 11 item 7: equal to the old cutlass version, but nothing ties it to cutlass
    ("ARG MOONCAKE_VERSION=4.4.2\n"
     "RUN pip install mooncake-transfer-engine==$MOONCAKE_VERSION\n",
     {}, {}, "MOONCAKE_VERSION=4.4.2 left unchanged: used for mooncake-transfer-engine"),
    ("ARG MOONCAKE_VERSION=4.4.2\n", {}, {}, "MOONCAKE_VERSION=4.4.2 left unchanged: its name"),
    ("ENV DEEPEP_COMMIT=0.6.8.post1\n", {}, {}, "DEEPEP_COMMIT=0.6.8.post1 left unchanged"),
    # used in an install of a group package: tied whatever its name
    ("ARG TOOLKIT=4.4.2\nRUN pip install nvidia-cutlass-dsl[cu13]==${TOOLKIT}\n", {},
     {"TOOLKIT": "4.5.0"}, None),
    ("ARG FLASHINFER_VERSION=0.6.8.post1\nRUN pip install flashinfer-python==${FLASHINFER_VERSION}"
     "\n", {}, {"FLASHINFER_VERSION": "0.6.11"}, None),
    # used for a group package whose old version is another one: left alone, with the reason
    ("ARG TOOLKIT=4.4.2\nRUN pip install flashinfer-python==${TOOLKIT}\n", {}, {},
     "used for flashinfer-python, whose old version is not 4.4.2"),
    # named in the config
    ("ARG MC=4.4.2\n", {"MC": "nvidia-cutlass-dsl"}, {"MC": "4.5.0"}, None),
    ("ARG CUTLASS_VERSION=4.4.2\n", {"CUTLASS_VERSION": "flashinfer-python"}, {},
     "configured for flashinfer-python, whose old version is not 4.4.2"),
])
def test_dockerfile_edits_only_tied_args(text: str, configured: dict[str, str],
                                         edited: dict[str, str], note: str | None) -> None:
    edit, notes = edit_dockerfile("Dockerfile", text, BUMPS, configured)
    validate_dockerfile(edit, BUMPS, configured)
    before, after = dockerfile_args(text), dockerfile_args(edit.new)
    assert {k: v for k, v in after.items() if v != before[k]} == \
        {k: {v} for k, v in edited.items()}
    if note is None:
        assert notes == []
    else:
        assert len(notes) == 1 and note in notes[0], notes
    if not edited:
        assert edit.new == text
        assert [m.line for m in left_unchanged({"Dockerfile": edit.new}, BUMPS)] == [1]


@pytest.mark.parametrize(("before", "after"), [
    ('assert_pkg_version("flashinfer_python", "0.6.8.post1", "Please upgrade")\n',
     'assert_pkg_version("flashinfer_python", "0.6.11", "Please upgrade")\n'),
    ("check_pkg_version_at_least('flashinfer-python', '0.6.8.post1')\n",
     "check_pkg_version_at_least('flashinfer-python', '0.6.11')\n"),
    ('check(pkg="FlashInfer-Cubin",\n      min_version="0.6.8.post1",  # keep\n)\n',
     'check(pkg="FlashInfer-Cubin",\n      min_version="0.6.11",  # keep\n)\n'),
    ('assert_pkg_version("torch", "0.6.8.post1", "x")\n',
     'assert_pkg_version("torch", "0.6.8.post1", "x")\n'),
    ('log("flashinfer_python 0.6.8.post1")\n', 'log("flashinfer_python 0.6.8.post1")\n'),
    ('f("flashinfer_python", "nvidia-cutlass-dsl", "0.6.8.post1")\n',
     'f("flashinfer_python", "nvidia-cutlass-dsl", "0.6.8.post1")\n'),
    ('def f():\n    if x:\n        assert_pkg_version(\n            "flashinfer_python",\n'
     '            "0.6.8.post1",\n        )\n',
     'def f():\n    if x:\n        assert_pkg_version(\n            "flashinfer_python",\n'
     '            "0.6.11",\n        )\n'),
    # lines as Python counts them: a form feed or a non-ASCII character before the literal
    ('"""Doc\x0cpage."""\nassert_pkg_version("flashinfer_python", "0.6.8.post1")\n',
     '"""Doc\x0cpage."""\nassert_pkg_version("flashinfer_python", "0.6.11")\n'),
    ('check("flashinfer_python", "é", r"0.6.8.post1")\r\n',
     'check("flashinfer_python", "é", r"0.6.11")\r\n'),
    # not a plain one-piece literal: left for a human (listed as left unchanged)
    ('check("flashinfer_python", "0.6." "8.post1")\n',
     'check("flashinfer_python", "0.6." "8.post1")\n'),
    ('check("flashinfer_python", "0.6.8\\x2epost1")\n',
     'check("flashinfer_python", "0.6.8\\x2epost1")\n'),
    ('check("flashinfer_python", f"0.6.8.post1")\n',
     'check("flashinfer_python", f"0.6.8.post1")\n'),
])
def test_assertions(before: str, after: str) -> None:
    edit = edit_assertions("m.py", before, BUMPS)
    assert edit.new == after
    assert all(e.kind == "assertion" for e in edit.edits)
    assert len(edit.edits) == (before != after)


def test_assertion_line_numbers() -> None:
    text = 'x = 1\n\nassert_pkg_version(\n    "flashinfer_python",\n    "0.6.8.post1",\n)\n'
    [edit] = edit_assertions("m.py", text, BUMPS).edits
    assert (edit.line, edit.before, edit.after) == (5, '"0.6.8.post1",', '"0.6.11",')


def test_unparsable_python_with_old_version_names_the_file() -> None:
    with pytest.raises(InputError, match=r"^m.py:1: cannot parse Python"):
        edit_assertions("m.py", 'x = ("0.6.8.post1"\n', BUMPS)


@pytest.mark.parametrize(("before", "after", "patterns"), [
    ('    min_version: Minimum version required (e.g., "0.6.8.post1").\n',
     '    min_version: Minimum version required (e.g., "0.6.11").\n', ()),
    ("Requires a version, e.g. 0.6.8.post1 or newer.\n",
     "Requires a version, e.g. 0.6.11 or newer.\n", ()),
    ("We shipped 0.6.8.post1 last month.\n", "We shipped 0.6.8.post1 last month.\n", ()),
    ("Tested with FlashInfer 0.6.8.post1.\n", "Tested with FlashInfer 0.6.11.\n",
     (r"FlashInfer {version}",)),
])
def test_docs(before: str, after: str, patterns: tuple[str, ...]) -> None:
    edit = edit_docs("doc.md", before, LEAD, (*BUILTIN_DOC_PATTERNS, *patterns))
    assert edit.new == after
    assert [e.kind for e in edit.edits] == (["doc"] if before != after else [])


def test_requirements_keep_comments_crlf_and_continuations() -> None:
    toml = ('[project]\r\ndependencies = [\r\n'
            '  "flashinfer_python==0.6.8.post1", # keep it aligned\r\n'
            "  'nvidia-cutlass-dsl[cu13] == 4.4.2 ; python_version >= \"3.10\"',\r\n]\r\n")
    pins = parse_pyproject(toml, "pyproject.toml", NAMES).pins
    edit = edit_requirements("pyproject.toml", toml, [(pins[0], "==0.6.11"),
                                                      (pins[1], "== 4.5.0")])
    assert edit.new == toml.replace("0.6.8.post1", "0.6.11").replace("4.4.2", "4.5.0")
    assert [e.line for e in edit.edits] == [3, 4]
    reqs = "# gpu\nnvidia-cutlass-dsl \\\n    ==4.4.2  # pinned\nflashinfer-cubin==0.6.8.post1\n"
    pins = parse_requirements(reqs, "requirements.txt", NAMES)
    edit = edit_requirements("requirements.txt", reqs, [(pins[0], "==4.5.0"),
                                                        (pins[1], "==0.6.11")])
    assert edit.new == reqs.replace("4.4.2", "4.5.0").replace("0.6.8.post1", "0.6.11")


def test_after_an_unchanged_pin_the_later_pins_are_still_edited() -> None:
    """A pin already at its target is skipped, not the end of the file's edits."""
    reqs = ("nvidia-cutlass-dsl==4.5.0\nflashinfer-python==0.6.8.post1\n"
            "flashinfer-cubin==0.6.8.post1\n")
    pins = parse_requirements(reqs, "requirements.txt", NAMES)
    edit = edit_requirements("requirements.txt", reqs, [(pins[0], "==4.5.0"),
                                                        (pins[1], "==0.6.11"),
                                                        (pins[2], "==0.6.11")])
    assert edit.new == reqs.replace("0.6.8.post1", "0.6.11")
    assert [(e.line, e.after) for e in edit.edits] == [(2, "flashinfer-python==0.6.11"),
                                                       (3, "flashinfer-cubin==0.6.11")]


def test_requirement_that_moved_is_an_error() -> None:
    toml = '[project]\ndependencies = ["flashinfer_python==0.6.8.post1"]\n'
    [pin] = parse_pyproject(toml, "pyproject.toml", NAMES).pins
    with pytest.raises(ApplyError, match="cannot find"):
        edit_requirements("pyproject.toml", "[project]\ndependencies = []\n", [(pin, "==0.6.11")])


def test_left_unchanged_lists_each_line_once() -> None:
    files = {"CHANGES.md": "Moved from 0.6.8.post1.\nNot 0.6.8.post10, not 10.6.8.post1.\n",
             "ci.yml": "cutlass: 4.4.2\n"}
    got = [(m.file, m.line, m.package, m.version) for m in left_unchanged(files, BUMPS)]
    assert got == [("CHANGES.md", 1, "flashinfer-cubin, flashinfer-jit-cache, flashinfer-python",
                    "0.6.8.post1"), ("ci.yml", 1, "nvidia-cutlass-dsl", "4.4.2")]


@pytest.mark.parametrize(("text", "found"), [
    ("flashinfer-python==0.6.8.post1", True), ('"0.6.8.post1"', True),
    ("git clone --branch v0.6.8.post1", True), ("0.6.8.post1, then", True),
    ("jit-cache 0.6.8.post1+cu130", True), ("flashinfer_python-0.6.8.post1-py3-none-any.whl", True),
    ("flashinfer_python-0.6.8.post1.tar.gz", True), ("Moved from 0.6.8.post1.", True),
    ("0.6.8.post1.dev0", False), ("0.6.8.post1-dev0", False), ("0.6.8.post1.DEV", False),
    ("0.6.8.post1.rc1", False), ("0.6.8.post1.2", False), ("0.6.8.post10", False),
    ("10.6.8.post1", False),
])
def test_a_version_occurrence_ends_at_a_version_boundary(text: str, found: bool) -> None:
    """0.6.8.post1.dev0 is another version, not an occurrence of 0.6.8.post1 (for the
    left-unchanged report and for the literal editor alike)."""
    assert bool(version_pattern("0.6.8.post1").search(text)) is found
    assert bool(literal_pattern("0.6.8.post1").search(text)) is found
    files = {"notes.txt": text + "\n"}
    assert [m.line for m in left_unchanged(files, BUMPS)] == ([1] if found else [])
