"""Discovery's edge cases in other layouts and hostile repository text (found by mutation
testing): pip's per-requirement options, shell assignments before ``;``/``&&`` (in scripts and
in a Dockerfile's ``RUN``/``ENV``), clones of repositories whose name only starts with the
lead's, setup.cfg metadata, undecodable files named by ``-r``. Each is read from real files in
a temporary tree, through ``find_pins`` (``discover``: the tree reader, then discovery) and
through ``pinbump plan`` / ``pinbump apply`` against a real package server; apply edits a
found pin minimally and never touches what is not a pin."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bot.adapters.tree import discover
from bot.cli import main
from bot.core.config import BUILTIN_GROUPS
from bot.core.discovery import MAX_INCLUDE_DEPTH, Target, find_pins, includes_of, read_requirements
from bot.core.edits import edit_requirements
from servers import PypiServer

NAMES = set(BUILTIN_GROUPS["flashinfer"].members)
LEAD = "flashinfer-python"
OLD = datetime.now(timezone.utc) - timedelta(days=60)
HASH = "sha256:" + "a" * 64


def write(root: Path, files: dict[str, str | bytes]) -> Path:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(text.encode() if isinstance(text, str) else text)
    return root


def scan(root: Path, files: dict[str, str | bytes]) -> Target:
    """Discovery over the tree as the commands read it (files written, then read back)."""
    return discover(write(root, files), NAMES)


def found(target: Target) -> list[tuple[str, str, str, str]]:
    """(where, package, version, frozen) of every pin."""
    return [(p.where, p.package, p.literal or str(p.current), p.frozen.split(" (")[0])
            for p in target.pins]


def publish(pypi: PypiServer) -> None:
    for v in ("0.6.8.post1", "0.6.11"):
        pypi.add("flashinfer-python", v, uploaded=OLD)
        pypi.add("flashinfer-cubin", v, uploaded=OLD)
    for v in ("4.4.2", "4.5.0"):
        pypi.add("nvidia-cutlass-dsl", v, uploaded=OLD)


def cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def plan(capsys: pytest.CaptureFixture[str], repo: Path, url: str) -> dict[str, object]:
    code, out, err = cli(capsys, "plan", "--repo", str(repo), "--index-url", url, "--json")
    assert code == 0, err
    doc: dict[str, object] = json.loads(out)
    return doc


def apply(capsys: pytest.CaptureFixture[str], repo: Path, url: str) -> None:
    code, _, err = cli(capsys, "apply", "--repo", str(repo), "--index-url", url)
    assert code == 0, err


def changed_files(doc: dict[str, object]) -> dict[str, list[str]]:
    changes = doc["changes"]
    assert isinstance(changes, list)
    return {c["package"]: c["files"] for c in changes}


# -- 1. pip's per-requirement options after a requirement ------------------------------------
@pytest.mark.parametrize(("line", "frozen"), [
    ("flashinfer-python==0.6.8.post1 -C key=value", ""),
    ("flashinfer-python==0.6.8.post1 -Ckey=value", ""),
    ("flashinfer-python==0.6.8.post1 --config-settings=key=value -C other=1", ""),
    ("flashinfer-python==0.6.8.post1 --config-settings key=value", ""),
    ("flashinfer-python==0.6.8.post1 --conf key=value", ""),  # optparse: a unique prefix
    ("flashinfer-python==0.6.8.post1 ; python_version >= '3.10' -C key=value", ""),
    ("flashinfer-python==0.6.8.post1 -C key=value --hash=" + HASH, "hash-pinned"),
    ("flashinfer-python==0.6.8.post1 --ha=" + HASH, "hash-pinned"),  # --hash, abbreviated
    ("flashinfer-python==0.6.8.post1 --h " + HASH, "hash-pinned"),
    ("flashinfer-python==0.6.8.post1 -C 'k=--hash=x'", ""),  # a quoted value, not --hash
])
def test_pip_options_after_a_requirement_are_not_part_of_it(tmp_path: Path, line: str,
                                                             frozen: str) -> None:
    target = scan(tmp_path, {"requirements.txt": f"torch\n{line}\n"})
    assert found(target) == [("requirements.txt:2", LEAD, "0.6.8.post1", frozen)]
    assert target.pins[0].requirement == line.split(" -")[0].strip()


def test_apply_moves_a_requirement_and_keeps_its_pip_options(
        pypi: PypiServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    publish(pypi)
    text = ("flashinfer-python==0.6.8.post1 -C key=value --config-settings=flag=0.6.8.post1\n"
            "flashinfer-cubin==0.6.8.post1 \\\n    --config-settings build=1\n"
            "nvidia-cutlass-dsl==4.4.2 --hash=" + HASH + "\n")
    repo = write(tmp_path / "repo", {"requirements.txt": text})
    doc = plan(capsys, repo, pypi.url)
    assert changed_files(doc) == {LEAD: ["requirements.txt:1"],
                                  "flashinfer-cubin": ["requirements.txt:2"]}
    apply(capsys, repo, pypi.url)
    assert (repo / "requirements.txt").read_text() == (
        "flashinfer-python==0.6.11 -C key=value --config-settings=flag=0.6.8.post1\n"
        "flashinfer-cubin==0.6.11 \\\n    --config-settings build=1\n"
        "nvidia-cutlass-dsl==4.4.2 --hash=" + HASH + "\n")



@pytest.mark.parametrize(("text", "expected"), [
    # pip joins a line ending in "\\" with the next before removing comments: the second
    # line is part of the first line's comment, never installed
    ("flashinfer-python==0.6.8.post1  # pinned \\\nflashinfer-python==0.6.1\n",
     [(1, LEAD, "0.6.8.post1")]),
    # a comment line never goes on; a comment line ends a continued requirement
    ("# pinned \\\nflashinfer-python==0.6.8.post1\n", [(2, LEAD, "0.6.8.post1")]),
    ("flashinfer-cubin\\\n# the lead's companion\nquack-kernels==0.3.0\n",
     [(1, "flashinfer-cubin", "None"), (3, "quack-kernels", "0.3.0")]),
    # "#egg=" after a space starts a comment for pip: no package name comes from it
    ("-e git+https://github.com/x/other@v0.6.1 #egg=flashinfer-python\n", []),
])
def test_continuations_and_comments_as_pip_reads_them(
        text: str, expected: list[tuple[int, str, str]]) -> None:
    pins = read_requirements(text, "requirements.txt", NAMES).pins
    assert [(p.line, p.package, p.literal or str(p.current)) for p in pins] == expected

@pytest.mark.parametrize(("text", "indexes", "includes"), [
    # --pypi-url is pip's other name for --index-url; long options by unique prefix
    ("--pypi-url https://a.example/simple\n--extra https://b.example/simple\n"
     "--ind=https://c.example/simple\n--find https://e.example/f.html\n"
     "-ihttps://f.example/simple\n",
     [(1, "--index-url", "https://a.example/simple"),
      (2, "--extra-index-url", "https://b.example/simple"),
      (3, "--index-url", "https://c.example/simple"),
      (4, "--find-links", "https://e.example/f.html"),
      (5, "--index-url", "https://f.example/simple")], []),
    # several options on one line: each is read
    ("--pre --extra-index-url https://d.example/simple -r base.txt\n",
     [(1, "--extra-index-url", "https://d.example/simple")], [(1, "base.txt")]),
    ("--cons pins.txt\n--requirem base.txt\n", [], [(1, "pins.txt"), (2, "base.txt")]),
    # ambiguous prefixes (pip refuses them) and options on a requirement line (pip ignores
    # them) are neither
    ("--re base.txt\n--co x\nflashinfer-python==0.6.8 --extra-index-url https://x.example\n",
     [], []),
])
def test_option_lines_are_read_as_pip_reads_them(text: str, indexes: list[tuple[int, str, str]],
                                                 includes: list[tuple[int, str]]) -> None:
    found_ = read_requirements(text, "requirements.txt", NAMES)
    assert (found_.indexes, found_.includes) == (indexes, includes)


@pytest.mark.parametrize("line", [
    "--edit git+https://github.com/flashinfer-ai/flashinfer@v0.6.9#egg=flashinfer-python",
    "-egit+https://github.com/flashinfer-ai/flashinfer@v0.6.9#egg=flashinfer-python",
    "-e git+https://github.com/flashinfer-ai/flashinfer@v0.6.9#egg=flashinfer-python -C k=v",
])
def test_editable_vcs_refs_in_every_option_form(line: str) -> None:
    [pin] = read_requirements(line + "\n", "requirements.txt", NAMES).pins
    assert (pin.package, pin.literal, pin.section) == (LEAD, "0.6.9", "requirements (VCS ref)")



# -- 5. an undecodable file named by -r/-c (or by the config's files) ------------------------
UNDECODABLE: dict[str, str | bytes] = {
    "requirements.txt": "-r deploy/gpu.lst\n-c deploy/pins\nflashinfer-python==0.6.8.post1\n",
    "deploy/gpu.lst": b"flashinfer-cubin==0.6.8.post1  # \xff\n",
    "deploy/pins": "nvidia-cutlass-dsl==4.4.2\n",
    "docs/logo.bin": b"\xff\xd8 not a pin file, not named by anything\n",
}


def test_an_undecodable_file_named_by_r_is_listed_as_not_read(tmp_path: Path) -> None:
    target = scan(tmp_path, UNDECODABLE)
    assert found(target) == [("requirements.txt:3", LEAD, "0.6.8.post1", ""),
                             ("deploy/pins:1", "nvidia-cutlass-dsl", "4.4.2", "")]
    assert target.skipped == (("deploy/gpu.lst", "not UTF-8 text (invalid start byte)"),)


def test_find_pins_lists_an_undecodable_include_or_config_file_as_not_read() -> None:
    """Whoever reads the tree (all of it up front, or the files -r names on demand), an
    undecodable file it was asked for is listed, never dropped."""
    target = find_pins(Path("/t"), {"requirements.txt": "-c deploy/gpu.lst\n"}, NAMES,
                       {"deploy/gpu.lst": "invalid start byte", "deploy/extra.pins": "NUL",
                        "docs/logo.bin": "binary"}, also=["deploy/extra.pins"])
    assert target.skipped == (("deploy/extra.pins", "not UTF-8 text (NUL)"),
                              ("deploy/gpu.lst", "not UTF-8 text (invalid start byte)"))


def test_plan_lists_an_undecodable_included_file_as_not_read(
        pypi: PypiServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    publish(pypi)
    repo = write(tmp_path / "repo", UNDECODABLE)
    doc = plan(capsys, repo, pypi.url)
    assert changed_files(doc) == {LEAD: ["requirements.txt:3"],
                                  "nvidia-cutlass-dsl": ["deploy/pins:1"]}
    assert doc["skipped"] == [{"file": "deploy/gpu.lst",
                               "reason": "not UTF-8 text (invalid start byte)"}]
    code, out, _ = cli(capsys, "plan", "--repo", str(repo), "--index-url", pypi.url)
    assert code == 0
    assert "  not read  deploy/gpu.lst: not UTF-8 text (invalid start byte)" in out


# -- 2. shell assignments before ";" / "&&", and the shell's other ways to set a variable ---
@pytest.mark.parametrize(("script", "expected"), [
    ("FLASHINFER_VERSION=0.6.8.post1; pip install flashinfer-python==$FLASHINFER_VERSION\n",
     [(1, LEAD, "FLASHINFER_VERSION")]),
    ("FI=0.6.8.post1 && pip install flashinfer-cubin==${FI}\n",
     [(1, "flashinfer-cubin", "FI")]),
    ("set -e; export FLASHINFER_VERSION='0.6.8.post1';\n", [(1, LEAD, "FLASHINFER_VERSION")]),
    ("export CUDA_VERSION=12.9 FLASHINFER_VERSION=0.6.8.post1\n",
     [(1, LEAD, "FLASHINFER_VERSION")]),
    ("export CUDA_VERSION=12.9 \\\n    FLASHINFER_VERSION=0.6.8.post1\n",
     [(2, LEAD, "FLASHINFER_VERSION")]),
    ('if [ -z "${CI:-}" ]; then FLASHINFER_VERSION=0.6.8.post1; fi\n',
     [(1, LEAD, "FLASHINFER_VERSION")]),
    ('[ -n "$PINNED" ] || FLASHINFER_VERSION=0.6.8.post1\n', [(1, LEAD, "FLASHINFER_VERSION")]),
    ("FLASHINFER_VERSION=${FLASHINFER_VERSION:-0.6.8.post1}\n",
     [(1, LEAD, "FLASHINFER_VERSION")]),
    # an environment for one command is read as it was: the variable's value for that command
    ("FLASHINFER_VERSION=0.6.8.post1 bash ci/install_flashinfer.sh\n",
     [(1, LEAD, "FLASHINFER_VERSION")]),
    ("FLASHINFER_VERSION=0.6.8.post1  # don't bump by hand\n",
     [(1, LEAD, "FLASHINFER_VERSION")]),
    # not an assignment: an argument, a comment, a quoted ";", an argument on a continued line
    ("echo FLASHINFER_VERSION=0.6.8.post1\n", []),
    ("# FLASHINFER_VERSION=0.6.1; echo\necho hi # ; FLASHINFER_VERSION=0.6.1\n", []),
    ('MSG="done; FLASHINFER_VERSION=0.6.1"\n', []),
    ("pip install torch \\\n    FLASHINFER_VERSION=0.6.1\n", []),
])
def test_shell_assignments_after_separators_and_other_forms(
        tmp_path: Path, script: str, expected: list[tuple[int, str, str]]) -> None:
    target = scan(tmp_path, {"ci/install.sh": "#!/bin/bash\n" + script})
    assert [(p.line, p.package, p.section) for p in target.pins
            if p.section.startswith("shell ")] == [
        (line + 1, package, f"shell {name}") for line, package, name in expected]
    assert {p.literal for p in target.pins if p.section.startswith("shell ")} <= {"0.6.8.post1"}


SCRIPT = """\
#!/bin/bash
set -euo pipefail
TAG=0.6.8.post1; FLASHINFER_VERSION=0.6.8.post1; pip install flashinfer-python==$FLASHINFER_VERSION
[ -n "${CI:-}" ] && FI_CUBIN=0.6.8.post1 && pip install "flashinfer-cubin==${FI_CUBIN}"
echo "FLASHINFER_VERSION=0.6.8.post1"
"""


def test_apply_moves_a_shell_variable_set_before_a_separator_and_nothing_else(
        pypi: PypiServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    publish(pypi)
    repo = write(tmp_path / "repo", {"ci/install.sh": SCRIPT})
    assert changed_files(plan(capsys, repo, pypi.url)) == {
        LEAD: ["ci/install.sh:3"], "flashinfer-cubin": ["ci/install.sh:4"]}
    apply(capsys, repo, pypi.url)
    # TAG holds the same version on the same line and is no pin: it stays; so does the echo
    assert (repo / "ci/install.sh").read_text() == SCRIPT.replace(
        "FLASHINFER_VERSION=0.6.8.post1;", "FLASHINFER_VERSION=0.6.11;").replace(
        "FI_CUBIN=0.6.8.post1", "FI_CUBIN=0.6.11")



@pytest.mark.parametrize(("dockerfile", "expected"), [
    ("RUN FLASHINFER_VERSION=0.6.8.post1 && pip install flashinfer-python==$FLASHINFER_VERSION\n",
     [(2, LEAD, "dockerfile RUN FLASHINFER_VERSION")]),
    ("RUN --mount=type=cache,target=/root/.cache \\\n    FI=0.6.8.post1; "
     "pip install flashinfer-cubin==${FI}\n", [(3, "flashinfer-cubin", "dockerfile RUN FI")]),
    ("ENV CUDA_HOME=/usr/local/cuda FLASHINFER_VERSION=0.6.8.post1\n",
     [(2, LEAD, "dockerfile ENV FLASHINFER_VERSION")]),
    ("ENV FLASHINFER_VERSION 0.6.8.post1\n", [(2, LEAD, "dockerfile ENV FLASHINFER_VERSION")]),
    # from an ARG, an argument, exec form: not a version set here
    ("ARG FLASHINFER_VERSION\nENV FLASHINFER_VERSION=${FLASHINFER_VERSION}\n", []),
    ("RUN echo FLASHINFER_VERSION=0.6.1 >> /etc/environment\n", []),
    ('RUN ["bash", "-c", "FLASHINFER_VERSION=0.6.1"]\n', []),
])
def test_dockerfile_variables_set_by_env_or_by_a_runs_shell(
        tmp_path: Path, dockerfile: str, expected: list[tuple[int, str, str]]) -> None:
    target = scan(tmp_path, {"docker/Dockerfile": "FROM base\n" + dockerfile})
    assert [(p.line, p.package, p.section) for p in target.pins
            if p.section.startswith(("dockerfile RUN", "dockerfile ENV"))] == expected


DOCKERFILE = """\
FROM base
ENV CUDA_HOME=/usr/local/cuda TAG=0.6.8.post1 FLASHINFER_VERSION=0.6.8.post1
RUN TAG=0.6.8.post1; FI_CUBIN=0.6.8.post1 && pip install flashinfer-cubin==${FI_CUBIN}
RUN pip install flashinfer-python==${FLASHINFER_VERSION}
"""


def test_apply_moves_dockerfile_variables_and_nothing_else(
        pypi: PypiServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    publish(pypi)
    repo = write(tmp_path / "repo", {"docker/Dockerfile": DOCKERFILE})
    assert changed_files(plan(capsys, repo, pypi.url)) == {
        LEAD: ["docker/Dockerfile:2"], "flashinfer-cubin": ["docker/Dockerfile:3"]}
    apply(capsys, repo, pypi.url)
    assert (repo / "docker/Dockerfile").read_text() == DOCKERFILE.replace(
        "FLASHINFER_VERSION=0.6.8.post1", "FLASHINFER_VERSION=0.6.11").replace(
        "FI_CUBIN=0.6.8.post1", "FI_CUBIN=0.6.11")

# -- 3. only a clone of the lead's own repository ties its --branch to the lead --------------
@pytest.mark.parametrize(("command", "pinned"), [
    ("git clone --branch v0.1.2 https://github.com/flashinfer-ai/flashinfer-bench.git", False),
    ("git clone https://github.com/flashinfer-ai/flashinfer-bench.git --branch v0.1.2", False),
    ("git clone https://github.com/other/flashinfer_tools -b v0.1.2", False),
    # a folder named flashinfer is not the repository
    ("git clone --depth 1 https://github.com/other/kernels.git /opt/flashinfer -b v0.1.2",
     False),
    ("git clone --branch main https://github.com/flashinfer-ai/flashinfer.git", False),
    ("git clone --branch v0.1.2 https://github.com/flashinfer-ai/flashinfer.git", True),
    # any host and owner, a trailing slash, any case; git's own option forms
    ("git clone -b v0.1.2 git@gitlab.example:mirror/FlashInfer.git/ src", True),
    ("git -c advice.detachedHead=false clone --recursive --br=v0.1.2 "
     "https://gitlab.example/mirror/flashinfer", True),
    ("git clone -bv0.1.2 --depth=1 -- https://github.com/flashinfer-ai/flashinfer", True),
])
def test_only_a_clone_of_the_leads_repository_pins_the_lead(tmp_path: Path, command: str,
                                                              pinned: bool) -> None:
    target = scan(tmp_path, {"ci/clone.sh": f"#!/bin/bash\n{command}\n",
                             "docker/Dockerfile": f"FROM x\nRUN {command}\n"})
    expected = [("ci/clone.sh:2", LEAD, "0.1.2", ""),
                ("docker/Dockerfile:2", LEAD, "0.1.2", "")] if pinned else []
    assert sorted(found(target)) == expected


def test_apply_leaves_a_clone_of_another_repository_alone(
        pypi: PypiServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    publish(pypi)
    script = ("#!/bin/bash\n"
              "git clone https://github.com/flashinfer-ai/flashinfer-bench.git --branch v0.6.8\n"
              "git clone --branch v0.6.8.post1 https://github.com/flashinfer-ai/flashinfer.git\n")
    repo = write(tmp_path / "repo", {"requirements.txt": "flashinfer-python==0.6.8.post1\n",
                                     "ci/clone.sh": script})
    assert changed_files(plan(capsys, repo, pypi.url)) == {
        LEAD: ["requirements.txt:1", "ci/clone.sh:3"]}
    apply(capsys, repo, pypi.url)
    assert (repo / "ci/clone.sh").read_text() == script.replace("v0.6.8.post1", "v0.6.11")



CLONE_AFTER_INSTALL = """\
#!/bin/bash
pip install flashinfer-cubin==0.6.8.post1 && \\
    git clone --depth 1 \\
      -b v0.6.8.post1 https://github.com/flashinfer-ai/flashinfer /src
"""


def test_apply_moves_a_clones_branch_on_its_own_continued_line(
        pypi: PypiServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The install on the command's first line holds the same version: the clone's pin is
    on the line of its --branch, and both move."""
    publish(pypi)
    repo = write(tmp_path / "repo", {"ci/build.sh": CLONE_AFTER_INSTALL,
                                     "docker/Dockerfile": "FROM x\nRUN " + CLONE_AFTER_INSTALL
                                     .split("\n", 1)[1]})
    assert changed_files(plan(capsys, repo, pypi.url)) == {
        LEAD: ["docker/Dockerfile:4", "ci/build.sh:4"],
        "flashinfer-cubin": ["docker/Dockerfile:2", "ci/build.sh:2"]}
    apply(capsys, repo, pypi.url)
    assert (repo / "ci/build.sh").read_text() == CLONE_AFTER_INSTALL.replace(
        "0.6.8.post1", "0.6.11")
    assert (repo / "docker/Dockerfile").read_text().count("0.6.11") == 2

# -- 4. setup.cfg: only requirement lists are pins ---------------------------------------------
SETUP_CFG = """\
[metadata]
name = flashinfer-python
version = 0.6.8.post1
description = flashinfer-cubin>=0.6

[options]
python_requires = >=3.10
install_requires =
    flashinfer-cubin==0.6.8.post1
    # nvidia-cutlass-dsl==4.0
    nvidia-cutlass-dsl==4.4.2; platform_machine == "x86_64"
setup-requires = quack-kernels>=0.3.0; torch
tests_require = flashinfer-jit-cache==0.6.8.post1

[options.extras_require]
cu13 =
    flashinfer-python[cu13]==0.6.8.post1

[options.entry_points]
console_scripts =
    flashinfer-cubin = flashinfer.cli:main

[flake8]
exclude = flashinfer-cubin
"""


def test_setup_cfg_pins_are_in_its_requirement_lists_only(tmp_path: Path) -> None:
    target = scan(tmp_path, {"setup.cfg": SETUP_CFG})
    assert found(target) == [
        ("setup.cfg:9", "flashinfer-cubin", "0.6.8.post1", ""),
        ("setup.cfg:11", "nvidia-cutlass-dsl", "4.4.2", ""),
        ("setup.cfg:12", "quack-kernels", "0.3.0", ""),
        ("setup.cfg:13", "flashinfer-jit-cache", "0.6.8.post1", ""),
        ("setup.cfg:17", LEAD, "0.6.8.post1", "")]
    assert [p.requirement for p in target.pins][1:3] == [
        'nvidia-cutlass-dsl==4.4.2; platform_machine == "x86_64"', "quack-kernels>=0.3.0"]


def test_apply_leaves_setup_cfg_metadata_alone(
        pypi: PypiServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    publish(pypi)
    cfg = ("[metadata]\nname = flashinfer-python\nversion = 0.6.8.post1\n\n[options]\n"
           "install_requires =\n    flashinfer-cubin==0.6.8.post1\n")
    repo = write(tmp_path / "repo", {"requirements.txt": "flashinfer-python==0.6.8.post1\n",
                                     "setup.cfg": cfg})
    doc = plan(capsys, repo, pypi.url)
    assert changed_files(doc) == {LEAD: ["requirements.txt:1"], "flashinfer-cubin": ["setup.cfg:7"]}
    assert doc["unchanged"] == []  # the project's own name is no unversioned pin of the lead
    apply(capsys, repo, pypi.url)
    assert (repo / "setup.cfg").read_text() == cfg.replace("cubin==0.6.8.post1", "cubin==0.6.11")


# -- a property: whatever pip options follow a requirement, the pin is the requirement alone --
PIP_OPTIONS = st.sampled_from([
    "-C key=value", "-Ckey=value", "--config-settings=key=value", "--config-settings key=v",
    "--conf k=v", "-C 'k=--hash=x'", '-C "a b=c"', "--hash=" + HASH, "--hash " + HASH,
    "--ha=" + HASH, "--h " + HASH])


@settings(max_examples=150, deadline=2000, database=None)
@given(name=st.sampled_from(["flashinfer-python", "Flashinfer_Cubin", "nvidia-cutlass-dsl"]),
       extras=st.sampled_from(["", "[cu13]"]),
       marker=st.sampled_from(["", " ; python_version >= '3.10'"]),
       options=st.lists(PIP_OPTIONS, max_size=3), continued=st.booleans())
def test_any_pip_options_after_a_requirement_leave_it_and_stay_on_apply(
        name: str, extras: str, marker: str, options: list[str], continued: bool) -> None:
    requirement = f"{name}{extras}==0.6.8.post1{marker}"
    tail = "".join((" \\\n    " if continued else " ") + o for o in options)
    text = f"torch\n{requirement}{tail}\n"
    [pin] = read_requirements(text, "requirements.txt", NAMES).pins
    hashed = any(o.startswith(("--hash", "--ha=", "--h ")) for o in options)
    assert (pin.line, pin.requirement, bool(pin.frozen)) == (2, requirement, hashed)
    edit = edit_requirements("requirements.txt", text, [(pin, "==0.6.11")])
    assert edit.new == text.replace("==0.6.8.post1", "==0.6.11", 1)


# -- 6. setup.py: only setup()'s requirement lists are pins -------------------------------------
SETUP_PY = """\
from setuptools import setup

REQS = [
    "flashinfer-cubin==0.6.8.post1",
]
REQS += ["nvidia-cutlass-dsl==4.4.2"]
NOTE = "flashinfer-python==0.6.8.post1 is the one we test"

setup(
    name="flashinfer-python",
    description="flashinfer-cubin==0.6.8.post1 compatible",
    long_description="flashinfer-python>=0.6.8.post1 required",
    install_requires=REQS,
    extras_require={"cu13": ["flashinfer-python[cu13]==0.6.8.post1"]},
    setup_requires=["quack-kernels>=0.3.0"],
    tests_require=REQS + ["flashinfer-jit-cache==0.6.8.post1"],
)
"""


def test_setup_py_pins_are_in_setups_requirement_lists_only(tmp_path: Path) -> None:
    target = scan(tmp_path, {"setup.py": SETUP_PY})
    assert found(target) == [
        ("setup.py:4", "flashinfer-cubin", "0.6.8.post1", ""),
        ("setup.py:6", "nvidia-cutlass-dsl", "4.4.2", ""),
        ("setup.py:14", LEAD, "0.6.8.post1", ""),
        ("setup.py:15", "quack-kernels", "0.3.0", ""),
        ("setup.py:16", "flashinfer-jit-cache", "0.6.8.post1", "")]


def test_apply_leaves_setup_py_descriptions_alone(
        pypi: PypiServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    publish(pypi)
    text = ('from setuptools import setup\nREQS = ["flashinfer-cubin==0.6.8.post1"]\n'
            'setup(name="x", description="flashinfer-cubin==0.6.8.post1 compatible",\n'
            '      install_requires=REQS)\n')
    repo = write(tmp_path / "repo", {"requirements.txt": "flashinfer-python==0.6.8.post1\n",
                                     "setup.py": text})
    assert changed_files(plan(capsys, repo, pypi.url)) == {
        LEAD: ["requirements.txt:1"], "flashinfer-cubin": ["setup.py:2"]}
    apply(capsys, repo, pypi.url)
    assert (repo / "setup.py").read_text() == text.replace(
        '["flashinfer-cubin==0.6.8.post1"]', '["flashinfer-cubin==0.6.11"]')


# -- 7. several name=value pairs on one ARG ------------------------------------------------------
@pytest.mark.parametrize(("dockerfile", "expected"), [
    ("ARG CUDA=12.9 FLASHINFER_VERSION=0.6.8.post1\n",
     [(2, LEAD, "dockerfile ARG FLASHINFER_VERSION")]),
    ("ARG FLASHINFER_VERSION=0.6.8.post1 FLASHINFER_CUBIN_VERSION=\"0.6.8.post1\"\n",
     [(2, LEAD, "dockerfile ARG FLASHINFER_VERSION"),
      (2, "flashinfer-cubin", "dockerfile ARG FLASHINFER_CUBIN_VERSION")]),
    ("ARG TAG=1 \\\n    FLASHINFER_VERSION=0.6.8.post1\n",
     [(3, LEAD, "dockerfile ARG FLASHINFER_VERSION")]),
    ("ARG FLASHINFER_VERSION\n", []),
])
def test_each_name_of_an_arg_line_is_read(tmp_path: Path, dockerfile: str,
                                           expected: list[tuple[int, str, str]]) -> None:
    target = scan(tmp_path, {"docker/Dockerfile": "FROM base\n" + dockerfile})
    assert [(p.line, p.package, p.section) for p in target.pins] == expected


ARGS_DOCKERFILE = """\
FROM base
ARG TAG=0.6.8.post1 FLASHINFER_VERSION=0.6.8.post1 FI_CUBIN=0.6.8.post1
RUN pip install flashinfer-python==${FLASHINFER_VERSION} flashinfer-cubin==${FI_CUBIN}
"""


def test_apply_moves_each_arg_of_one_line_and_nothing_else(
        pypi: PypiServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    publish(pypi)
    repo = write(tmp_path / "repo", {"docker/Dockerfile": ARGS_DOCKERFILE})
    assert changed_files(plan(capsys, repo, pypi.url)) == {
        LEAD: ["docker/Dockerfile:2"], "flashinfer-cubin": ["docker/Dockerfile:2"]}
    apply(capsys, repo, pypi.url)
    # TAG holds the same version and feeds no install: it stays
    assert (repo / "docker/Dockerfile").read_text() == ARGS_DOCKERFILE.replace(
        "FLASHINFER_VERSION=0.6.8.post1", "FLASHINFER_VERSION=0.6.11").replace(
        "FI_CUBIN=0.6.8.post1", "FI_CUBIN=0.6.11")


# -- 8. a checkout after a clone of the lead's repository, in one command ------------------------
@pytest.mark.parametrize(("command", "pinned"), [
    ("git clone https://github.com/flashinfer-ai/flashinfer.git && cd flashinfer && "
     "git checkout v0.1.2", True),
    ("git clone --recursive https://github.com/flashinfer-ai/flashinfer /src/flashinfer; "
     "git -C /src/flashinfer checkout -q tags/v0.1.2", True),
    ("git clone https://github.com/flashinfer-ai/flashinfer && cd flashinfer && \\\n"
     "    git checkout 0.1.2", True),
    # another repository's checkout, a checkout of a branch, a checkout on another command
    ("git clone https://github.com/flashinfer-ai/flashinfer-bench.git && cd flashinfer-bench "
     "&& git checkout v0.1.2", False),
    ("git clone https://github.com/flashinfer-ai/flashinfer && cd flashinfer && "
     "git checkout main", False),
    ("git clone https://github.com/flashinfer-ai/flashinfer\ncd flashinfer\n"
     "git checkout v0.1.2", False),
    ("git checkout v0.1.2", False),
])
def test_a_checkout_after_a_clone_of_the_leads_repository_pins_the_lead(
        tmp_path: Path, command: str, pinned: bool) -> None:
    target = scan(tmp_path, {"ci/clone.sh": f"#!/bin/bash\n{command}\n",
                             "docker/Dockerfile": f"FROM x\nRUN {command}\n"})
    line = 2 + command.count("\n")
    expected = [(f"ci/clone.sh:{line}", LEAD, "0.1.2", ""),
                (f"docker/Dockerfile:{line}", LEAD, "0.1.2", "")] if pinned else []
    assert sorted(found(target)) == expected


CHECKOUT = """\
#!/bin/bash
git clone https://github.com/flashinfer-ai/flashinfer-bench.git && git checkout v0.6.8.post1
git clone https://github.com/flashinfer-ai/flashinfer.git && \\
    cd flashinfer && git checkout v0.6.8.post1
"""


def test_apply_moves_a_checkout_after_a_clone_of_the_leads_repository(
        pypi: PypiServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    publish(pypi)
    repo = write(tmp_path / "repo", {"requirements.txt": "flashinfer-python==0.6.8.post1\n",
                                     "ci/clone.sh": CHECKOUT})
    assert changed_files(plan(capsys, repo, pypi.url)) == {
        LEAD: ["requirements.txt:1", "ci/clone.sh:4"]}
    apply(capsys, repo, pypi.url)
    assert (repo / "ci/clone.sh").read_text() == CHECKOUT.replace(
        "cd flashinfer && git checkout v0.6.8.post1", "cd flashinfer && git checkout v0.6.11")


# -- 9. -r/-c followed through included files, whatever their names ------------------------------
NESTED: dict[str, str | bytes] = {
    "requirements.txt": "-r deploy/base.lst\nflashinfer-python==0.6.8.post1\n",
    "deploy/base.lst": "flashinfer-cubin==0.6.8.post1\n-c more/pins\n-r base.lst\n",
    "deploy/more/pins": "nvidia-cutlass-dsl==4.4.2\n-r ../base.lst\n-r ../../deep/a\n",
    "deep/a": "-r b\n",
    "deep/b": "-r a\nflashinfer-python==0.6.8.post1\n",
}


def test_includes_are_followed_through_files_of_any_name(tmp_path: Path) -> None:
    target = scan(tmp_path, NESTED)
    assert sorted(found(target)) == [
        ("deep/b:2", LEAD, "0.6.8.post1", ""),
        ("deploy/base.lst:1", "flashinfer-cubin", "0.6.8.post1", ""),
        ("deploy/more/pins:1", "nvidia-cutlass-dsl", "4.4.2", ""),
        ("requirements.txt:2", LEAD, "0.6.8.post1", "")]
    assert target.skipped == ()


def test_includes_stop_at_the_depth_bound() -> None:
    chain = {f"d/{i}": f"-r {i + 1}\n" for i in range(MAX_INCLUDE_DEPTH + 4)}
    files = {"requirements.txt": "-r d/0\n", **chain}
    includes = includes_of(files, NAMES)
    assert "d/0" in includes and f"d/{MAX_INCLUDE_DEPTH - 1}" in includes
    assert f"d/{MAX_INCLUDE_DEPTH + 1}" not in includes


def test_plan_and_apply_follow_nested_includes(
        pypi: PypiServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    publish(pypi)
    repo = write(tmp_path / "repo", NESTED)
    assert changed_files(plan(capsys, repo, pypi.url)) == {
        LEAD: ["requirements.txt:2", "deep/b:2"], "flashinfer-cubin": ["deploy/base.lst:1"],
        "nvidia-cutlass-dsl": ["deploy/more/pins:1"]}
    apply(capsys, repo, pypi.url)
    assert (repo / "deploy/base.lst").read_text() == str(NESTED["deploy/base.lst"]).replace(
        "0.6.8.post1", "0.6.11")
    assert (repo / "deploy/more/pins").read_text() == str(NESTED["deploy/more/pins"]).replace(
        "4.4.2", "4.5.0")
    assert (repo / "deep/b").read_text() == "-r a\nflashinfer-python==0.6.11\n"


# -- 10. setup.cfg's file: directive names a requirements file -----------------------------------
CFG_FILE = {
    "setup.cfg": ("[metadata]\nname = x\n\n[options]\ninstall_requires = file: deploy/reqs.lst\n"
                  "[options.extras_require]\ncu13 = file: deploy/cu13.lst, deploy/more.lst\n"),
    "deploy/reqs.lst": "flashinfer-python==0.6.8.post1\n",
    "deploy/cu13.lst": "flashinfer-cubin==0.6.8.post1\n",
    "deploy/more.lst": "# none\n",
}


def test_setup_cfg_file_directives_are_read_as_requirements(tmp_path: Path) -> None:
    assert sorted(found(scan(tmp_path, CFG_FILE))) == [
        ("deploy/cu13.lst:1", "flashinfer-cubin", "0.6.8.post1", ""),
        ("deploy/reqs.lst:1", LEAD, "0.6.8.post1", "")]


def test_plan_and_apply_follow_setup_cfg_file_directives(
        pypi: PypiServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    publish(pypi)
    repo = write(tmp_path / "repo", CFG_FILE)
    assert changed_files(plan(capsys, repo, pypi.url)) == {
        LEAD: ["deploy/reqs.lst:1"], "flashinfer-cubin": ["deploy/cu13.lst:1"]}
    apply(capsys, repo, pypi.url)
    assert (repo / "deploy/reqs.lst").read_text() == "flashinfer-python==0.6.11\n"
    assert (repo / "setup.cfg").read_text() == CFG_FILE["setup.cfg"]


def test_a_setup_cfg_file_directive_outside_the_target_is_listed_not_dropped(
        tmp_path: Path) -> None:
    """``file: ../reqs.txt`` is never read (it is not the target's), and is listed at its
    line, as an outside -r is; the one inside is read."""
    (tmp_path / "reqs.txt").write_text("flashinfer-python==0.6.8.post1\n")
    target = scan(tmp_path / "repo", {
        "setup.cfg": "[options]\ninstall_requires =\n    file: ../reqs.txt\n"
                     "[options.extras_require]\ncu13 = file: /etc/reqs.txt, cu13.lst\n",
        "cu13.lst": "flashinfer-cubin==0.6.8.post1\n"})
    assert found(target) == [("cu13.lst:1", "flashinfer-cubin", "0.6.8.post1", "")]
    outside = "file: names a file outside the target (not read)"
    assert list(target.skipped) == [("setup.cfg:3", outside), ("setup.cfg:5", outside)]
