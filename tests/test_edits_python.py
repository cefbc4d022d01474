"""Version checks in Python sources, versions in documented examples, and the report of every
old version left in the tree: what moves, what is left for a human, line by line."""

from __future__ import annotations

import pytest

from bot.core.edits import BUILTIN_DOC_PATTERNS, Bump, edit_assertions, edit_docs, left_unchanged
from bot.errors import InputError

LEAD = Bump("flashinfer-python", frozenset({"0.6.8.post1"}), "0.6.11")
BUMPS = [LEAD,
         Bump("flashinfer-cubin", frozenset({"0.6.8.post1", "0.6.9"}), "0.6.11"),
         Bump("nvidia-cutlass-dsl", frozenset({"4.4.2"}), "4.5.0")]


@pytest.mark.parametrize(("before", "after", "lines"), [
    # two literals of one call on one line: both move, one edit each
    ('check("flashinfer_python", "0.6.8.post1", max_tested="0.6.8.post1")\n',
     'check("flashinfer_python", "0.6.11", max_tested="0.6.11")\n', [1, 1]),
    # string prefixes and triple quotes are kept; every old version of the package moves
    ("check(u'flashinfer-cubin', u'0.6.9', R'0.6.8.post1', '''0.6.8.post1''')\n",
     "check(u'flashinfer-cubin', u'0.6.11', R'0.6.11', '''0.6.11''')\n", [1, 1, 1]),
    # two checks on one line, each with its own package's version
    ('x = 1\ny = (\n  1,\n)\nassert_version("flashinfer-cubin", "0.6.9"); '
     'assert_version("nvidia_cutlass_dsl", "4.4.2")\n',
     'x = 1\ny = (\n  1,\n)\nassert_version("flashinfer-cubin", "0.6.11"); '
     'assert_version("nvidia_cutlass_dsl", "4.5.0")\n', [5, 5]),
    # U prefix; a call without any version before the check does not end the search
    ('import sys\nprint("checking")\ncheck(U"flashinfer-python", U"0.6.8.post1")\n',
     'import sys\nprint("checking")\ncheck(U"flashinfer-python", U"0.6.11")\n', [3]),
    # a call naming two packages is skipped, not the end of the search
    ('check("flashinfer_python", "nvidia-cutlass-dsl", "0.6.8.post1")\n'
     'check("flashinfer_python", "0.6.8.post1")\n',
     'check("flashinfer_python", "nvidia-cutlass-dsl", "0.6.8.post1")\n'
     'check("flashinfer_python", "0.6.11")\n', [2]),
    # checks on two lines: one edit each
    ('check("flashinfer_python", "0.6.8.post1")\ncheck("flashinfer_cubin", "0.6.9")\n',
     'check("flashinfer_python", "0.6.11")\ncheck("flashinfer_cubin", "0.6.11")\n', [1, 2]),
    # two literals concatenated with different quotes are left for a human
    ("check(\"flashinfer_python\", \"0.6.8\" '.post1')  # 0.6.8.post1\n", None, []),
    # the package name in a nested call is not this call's
    ('ok = version_ok(get("flashinfer_cubin"), "0.6.8.post1")\n', None, []),
    # another package's old version is not this package's
    ('check("nvidia-cutlass-dsl", "0.6.8.post1")\n', None, []),
    # not a package name; bytes are not text; a literal over two lines is left for a human
    ('check("flashinfer python", "0.6.8.post1")\n', None, []),
    ('check(b"flashinfer-python", b"0.6.8.post1")\n', None, []),
    ('check("flashinfer-python", """0.6.8.post1\n""")\n', None, []),
    # a file without any old version is not parsed (it need not even be Python 3)
    ('print "flashinfer-python", "0.6.11"\n', None, []),
])
def test_version_checks(before: str, after: str | None, lines: list[int]) -> None:
    edit = edit_assertions("pkg/check.py", before, BUMPS)
    assert (edit.path, edit.old, edit.new) == ("pkg/check.py", before, after or before)
    assert [e.line for e in edit.edits] == lines
    assert all((e.file, e.kind) == ("pkg/check.py", "assertion") for e in edit.edits)
    assert [(e.before, e.after) for e in edit.edits] == [
        (before.splitlines()[n - 1].strip(), (after or before).splitlines()[n - 1].strip())
        for n in lines]


def test_python_with_a_null_byte_is_an_error() -> None:
    with pytest.raises(InputError) as err:
        edit_assertions("pkg/check.py", 'check("flashinfer-python", "0.6.8.post1")\x00\n', BUMPS)
    message = str(err.value)
    assert message.startswith("pkg/check.py:1: cannot parse Python (")
    assert "null bytes" in message and message.endswith("); fix the file first")


def test_python_that_does_not_parse_names_the_line() -> None:
    with pytest.raises(InputError) as err:
        edit_assertions("pkg/check.py", 'x = 1\n\ncheck("flashinfer-python", "0.6.8.post1\n',
                        BUMPS)
    assert str(err.value) == ("pkg/check.py:3: cannot parse Python (unterminated string literal "
                              "(detected at line 3)); fix the file first")


@pytest.mark.parametrize(("before", "after", "patterns"), [
    # every old version of the lead, in the configured pattern, keeping what follows it
    ("FlashInfer 0.6.8.post1 or later\r\nFlashInfer 0.6.9 or later\r\n",
     "FlashInfer 0.6.11 or later\r\nFlashInfer 0.6.11 or later\r\n", (r"FlashInfer {version}",)),
    # each match on a line
    ("Tested with FlashInfer 0.6.8.post1 (and FlashInfer 0.6.8.post1 wheels).\n",
     "Tested with FlashInfer 0.6.11 (and FlashInfer 0.6.11 wheels).\n", (r"FlashInfer {version}",)),
    # what the pattern matches after the version stays
    ("FlashInfer 0.6.8.post1 or later is needed.\n", "FlashInfer 0.6.11 or later is needed.\n",
     (r"FlashInfer {version} or later",)),
    ("Use FlashInfer 0.6.8.post1 or later.\n", "Use FlashInfer 0.6.11 or later.\n",
     (r"FlashInfer {version} or later",)),
    # an old version absent from the text does not stop the next one
    ("FlashInfer 0.6.9 or later\n", "FlashInfer 0.6.11 or later\n", (r"FlashInfer {version}",)),
    # the version's dots are dots, not any character
    ("Tested with FlashInfer 0x6y8zpost1.\n", None, (r"FlashInfer {version}",)),
    # only lines a pattern matches
    ("Requires a version, e.g. 0.6.8.post1.\nWe shipped 0.6.8.post1.\n",
     "Requires a version, e.g. 0.6.11.\nWe shipped 0.6.8.post1.\n", ()),
])
def test_documented_examples(before: str, after: str | None, patterns: tuple[str, ...]) -> None:
    lead = Bump("flashinfer-python", frozenset({"0.6.8.post1", "0.6.9"}), "0.6.11")
    edit = edit_docs("docs/install.md", before, lead, (*BUILTIN_DOC_PATTERNS, *patterns))
    assert (edit.path, edit.old, edit.new) == ("docs/install.md", before, after or before)
    changed = [n for n, (a, b) in enumerate(zip(before.splitlines(), edit.new.splitlines(),
                                                strict=True), start=1) if a != b]
    assert [(e.file, e.line, e.kind) for e in edit.edits] == [
        ("docs/install.md", n, "doc") for n in changed]


def test_docs_without_a_lead_bump_stay() -> None:
    text = "Requires a version, e.g. 0.6.8.post1.\n"
    edit = edit_docs("README.md", text, None, BUILTIN_DOC_PATTERNS)
    assert (edit.path, edit.old, edit.new, edit.edits) == ("README.md", text, text, [])


def test_every_old_version_left_is_listed_line_by_line() -> None:
    files = {
        "z/notes.txt": "cubin 0.6.9 and python 0.6.8.post1 on one line\r\nnothing here\r\n"
                       "  cutlass 4.4.2  " + "x" * 300 + "\n",
        "a/README.md": "Not 0.6.8.post10, not 10.6.8.post1, not 0.6.8.post1.2.\n",
        "b/empty.txt": "",
    }
    got = [(m.file, m.line, m.package, m.version, m.text) for m in left_unchanged(files, BUMPS)]
    both = "flashinfer-cubin, flashinfer-python"
    assert got == [
        ("z/notes.txt", 1, both, "0.6.8.post1", "cubin 0.6.9 and python 0.6.8.post1 on one line"),
        ("z/notes.txt", 1, "flashinfer-cubin", "0.6.9",
         "cubin 0.6.9 and python 0.6.8.post1 on one line"),
        ("z/notes.txt", 3, "nvidia-cutlass-dsl", "4.4.2", ("cutlass 4.4.2  " + "x" * 300)[:200]),
    ]
