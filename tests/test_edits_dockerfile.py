"""The Dockerfile editor: which ARG/ENV default belongs to which bump (the config first, then
the install that uses it, then its name), the note for each default that stays, RUN pins
(continued, CRLF, lower-case instructions), and the checks before anything is written."""

from __future__ import annotations

import pytest

from bot.core.edits import (
    Bump,
    FileEdit,
    dockerfile_args,
    dockerfile_ties,
    dockerfile_uses,
    edit_dockerfile,
    validate_dockerfile,
)
from bot.errors import ApplyError, DockerfileConflict

# the lead and its cubin move to different versions here, so that which one a default is tied
# to shows in the edit
BUMPS = [Bump("flashinfer-python", frozenset({"0.6.8.post1"}), "0.6.11"),
         Bump("flashinfer-cubin", frozenset({"0.6.8.post1"}), "0.6.10"),
         Bump("nvidia-cutlass-dsl", frozenset({"4.4.2"}), "4.5.0")]
DIFFERENT = "which move to different versions"


@pytest.mark.parametrize(("text", "configured", "after", "note"), [
    # the install that uses the ARG ties it, before its name does
    ("ARG FLASHINFER_VERSION=0.6.8.post1\n"
     "RUN pip install flashinfer-cubin==${FLASHINFER_VERSION}\n",
     {}, "ARG FLASHINFER_VERSION=0.6.10\nRUN pip install flashinfer-cubin==${FLASHINFER_VERSION}\n",
     None),
    # by its name alone, the most specific name wins: every word of flashinfer-cubin's name
    # over flashinfer-python's (whose one word, flashinfer, both share)
    ("ARG FLASHINFER_CUBIN_VERSION=0.6.8.post1\nARG FLASHINFER_VERSION=0.6.8.post1\n", {},
     "ARG FLASHINFER_CUBIN_VERSION=0.6.10\nARG FLASHINFER_VERSION=0.6.11\n", None),
    ("ENV CUBIN_VERSION=0.6.8.post1\n", {}, "ENV CUBIN_VERSION=0.6.10\n", None),
    ("ARG V=0.6.8.post1\nRUN pip install flashinfer-python==$V flashinfer-cubin==$V\n", {}, None,
     f"ARG V=0.6.8.post1 left unchanged: used for flashinfer-cubin, flashinfer-python, "
     f"{DIFFERENT}"),
    ("ARG V=4.4.2\nRUN pip install flashinfer-python==$V flashinfer-cubin==$V\n", {}, None,
     "ARG V=4.4.2 left unchanged: used for flashinfer-cubin, flashinfer-python, whose old "
     "version is not 4.4.2"),
    # the config wins over the install
    ("ARG V=4.4.2\nRUN pip install flashinfer-python==$V\n", {"V": "nvidia-cutlass-dsl"},
     "ARG V=4.5.0\nRUN pip install flashinfer-python==$V\n", None),
    ("ARG V=4.4.2\nRUN pip install flashinfer-python==$V\n", {}, None,
     "ARG V=4.4.2 left unchanged: used for flashinfer-python, whose old version is not 4.4.2"),
    # ENV with quoted values, two on one line
    ("ENV CUTLASS_VERSION='4.4.2' CUBIN_VERSION=\"0.6.8.post1\"\n", {},
     "ENV CUTLASS_VERSION='4.5.0' CUBIN_VERSION=\"0.6.10\"\n", None),
    # lower-case instructions are instructions
    ("FROM nvidia/cuda:12.9.1-devel-ubuntu24.04\narg cubin_version=0.6.8.post1\n"
     "run pip install flashinfer-cubin==0.6.8.post1\n", {},
     "FROM nvidia/cuda:12.9.1-devel-ubuntu24.04\narg cubin_version=0.6.10\n"
     "run pip install flashinfer-cubin==0.6.10\n", None),
    # a use over a continued RUN with CRLF line ends
    ("ARG FI=0.6.8.post1\r\nRUN pip install \\\r\n    flashinfer-cubin==${FI}\r\n", {},
     "ARG FI=0.6.10\r\nRUN pip install \\\r\n    flashinfer-cubin==${FI}\r\n", None),
    # an ARG whose use comes before it, in a RUN continued over three lines
    ("ARG FI_VER=0.6.8.post1\nRUN pip install \\\n    flashinfer-cubin==${FI_VER} \\\n"
     "    nvidia-cutlass-dsl==$CUTLASS\nARG CUTLASS=4.4.2\n", {},
     "ARG FI_VER=0.6.10\nRUN pip install \\\n    flashinfer-cubin==${FI_VER} \\\n"
     "    nvidia-cutlass-dsl==$CUTLASS\nARG CUTLASS=4.5.0\n", None),
    # a file ending in a continuation
    ("RUN pip install flashinfer-cubin==0.6.8.post1 \\", {},
     "RUN pip install flashinfer-cubin==0.6.10 \\", None),
    # RUN pins: extras, quotes, >=; not a longer version, not another package
    ("RUN pip install flashinfer_python[jit]==0.6.8.post1 'flashinfer-cubin>=0.6.8.post1' "
     "flashinfer-python==0.6.8.post10 torch==0.6.8.post1\n", {},
     "RUN pip install flashinfer_python[jit]==0.6.11 'flashinfer-cubin>=0.6.10' "
     "flashinfer-python==0.6.8.post10 torch==0.6.8.post1\n", None),
    # the same default twice in one file: both move
    ("ARG CUBIN_VERSION=0.6.8.post1\nFROM base\nARG CUBIN_VERSION=0.6.8.post1\n", {},
     "ARG CUBIN_VERSION=0.6.10\nFROM base\nARG CUBIN_VERSION=0.6.10\n", None),
    # a stage re-declaring the ARG without a default
    ("ARG CUBIN_VERSION=0.6.8.post1\nFROM base\nARG CUBIN_VERSION\n", {},
     "ARG CUBIN_VERSION=0.6.10\nFROM base\nARG CUBIN_VERSION\n", None),
    # a blank line and a comment do not end the file's instructions; a pin in a comment
    # before a RUN is not the RUN's
    ("FROM base\n\n# flashinfer-cubin==0.6.8.post1 crashed on H100\nARG CUBIN_VERSION=0.6.8.post1\n"
     "RUN pip install flashinfer-cubin==${CUBIN_VERSION}\n", {},
     "FROM base\n\n# flashinfer-cubin==0.6.8.post1 crashed on H100\nARG CUBIN_VERSION=0.6.10\n"
     "RUN pip install flashinfer-cubin==${CUBIN_VERSION}\n", None),
    # a default inside a shell default is not an ARG's
    ("ARG X=1\nRUN pip install flashinfer-python==${X:-0.6.8.post1}\n", {}, None, None),
])
def test_which_bump_a_default_follows(text: str, configured: dict[str, str], after: str | None,
                                      note: str | None) -> None:
    edit, notes = edit_dockerfile("docker/Dockerfile", text, BUMPS, configured)
    assert (edit.path, edit.old) == ("docker/Dockerfile", text)
    assert edit.new == (text if after is None else after)
    assert notes == ([] if note is None else [f"docker/Dockerfile:1: {note}"])
    assert [(e.file, e.line) for e in edit.edits] == [
        ("docker/Dockerfile", n) for n, (a, b) in enumerate(
            zip(text.splitlines(), edit.new.splitlines(), strict=True), start=1) if a != b]
    validate_dockerfile(edit, BUMPS, configured)


def test_each_edit_says_what_it_replaced() -> None:
    text = "ARG CUBIN_VERSION=0.6.8.post1\nRUN pip install \\\n    flashinfer-python==0.6.8.post1\n"
    edit, _ = edit_dockerfile("Dockerfile", text, BUMPS)
    assert [(e.line, e.kind, e.before, e.after) for e in edit.edits] == [
        (1, "dockerfile-arg", "ARG CUBIN_VERSION=0.6.8.post1", "ARG CUBIN_VERSION=0.6.10"),
        (3, "dockerfile-run", "flashinfer-python==0.6.8.post1", "flashinfer-python==0.6.11")]


def test_ties_name_each_default_once() -> None:
    text = ("ARG CUTLASS_VERSION=4.4.2\nENV PKG_VERSION=0.6.8.post1\nARG CUDA=12.9.1\n"
            "FROM base\nARG CUTLASS_VERSION=4.4.2\n")
    ties = dockerfile_ties(text, BUMPS)
    assert list(ties) == ["CUTLASS_VERSION", "PKG_VERSION"]
    assert ties["CUTLASS_VERSION"] == BUMPS[2]
    assert ties["PKG_VERSION"] == (
        "its name and use tie it to no package of the group (it equals the old version of "
        "flashinfer-cubin, flashinfer-python); name it under [dockerfile-args] in the config "
        "if it is one")


def test_the_variables_each_install_uses() -> None:
    text = ("RUN pip install Flashinfer_Cubin[cu13]==${CUBIN} \"flashinfer-python >= $FI\" \\\n"
            "    nvidia-cutlass-dsl~=${CUTLASS:-4.4.2} x==1\n"
            "ENV y==${NOT_RUN}\n# RUN pip install a==$COMMENTED\n")
    assert dockerfile_uses(text) == {"CUBIN": {"flashinfer-cubin"}, "FI": {"flashinfer-python"},
                                     "CUTLASS": {"nvidia-cutlass-dsl"}}


def test_the_args_of_a_file() -> None:
    text = "ARG A=1 B='2'\narg c\nENV D=4\nARG A=3\n"
    assert dockerfile_args(text) == {"A": {"1", "3"}, "B": {"2"}}  # `arg c` has no default


@pytest.mark.parametrize(("text", "message"), [
    ("ARG CUBIN_VERSION=0.6.8.post1\nFROM a AS one\nARG CUBIN_VERSION=0.6.7\n",
     "docker/Dockerfile: ARG CUBIN_VERSION has different defaults in one file: line 1 "
     "(0.6.8.post1), line 3 (0.6.7); make them agree, then run again. Nothing was written"),
    # the new version counts as relevant too (a half-edited file)
    ("ARG CUBIN_VERSION=0.6.10\nFROM a AS one\nARG CUBIN_VERSION=0.6.7\nARG CUBIN_VERSION\n",
     "docker/Dockerfile: ARG CUBIN_VERSION has different defaults in one file: line 1 "
     "(0.6.10), line 3 (0.6.7); make them agree"),
])
def test_conflicting_defaults_are_an_error(text: str, message: str) -> None:
    with pytest.raises(DockerfileConflict) as err:
        edit_dockerfile("docker/Dockerfile", text, BUMPS)
    assert str(err.value).startswith(message)


def test_an_arg_left_at_an_old_version_is_caught_before_writing() -> None:
    text = "ARG CUBIN_VERSION=0.6.8.post1\nARG PKG_VERSION=0.6.8.post1\n"
    # an editor that missed the tied ARG
    with pytest.raises(ApplyError) as err:
        validate_dockerfile(FileEdit("Dockerfile", text, text), BUMPS)
    assert str(err.value) == ("Dockerfile: ARG CUBIN_VERSION still holds an old version after "
                              "editing; nothing written")
    # the untied one may stay
    edited = text.replace("CUBIN_VERSION=0.6.8.post1", "CUBIN_VERSION=0.6.10")
    validate_dockerfile(FileEdit("Dockerfile", text, edited), BUMPS)
    # an ARG no longer in the edited text holds no old version
    validate_dockerfile(FileEdit("Dockerfile", text, "ARG PKG_VERSION=0.6.8.post1\n"), BUMPS)


def test_a_name_holding_no_package_name_whole_ties_to_every_package_it_shares_a_word_with(
        ) -> None:
    """FLASHINFER_VERSION holds all of no name when only the cubin and the jit-cache move: it
    could be either, and stays with the reason."""
    bumps = [Bump("flashinfer-cubin", frozenset({"0.6.8.post1"}), "0.6.10"),
             Bump("flashinfer-jit-cache", frozenset({"0.6.8.post1"}), "0.6.9")]
    text = "ARG FLASHINFER_VERSION=0.6.8.post1\nARG FLASHINFER_JIT_CACHE_VER=0.6.8.post1\n"
    ties = dockerfile_ties(text, bumps)
    assert ties["FLASHINFER_VERSION"] == (
        f"named for flashinfer-cubin, flashinfer-jit-cache, {DIFFERENT}")
    assert ties["FLASHINFER_JIT_CACHE_VER"] == bumps[1]
