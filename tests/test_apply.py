"""pinbump apply end to end: a real pypiserver, an SGLang-shaped tree written here."""

from __future__ import annotations

import json
import re
import resource
import signal
import stat
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from bot.adapters.tree import read_tree
from bot.adapters.writer import write_all
from bot.cli import main
from bot.commands.context import PlanOptions
from bot.core.editset import apply_reads, compute_edits
from bot.errors import WriteError
from planning import planned
from servers import PypiServer

OLD = datetime.now(timezone.utc) - timedelta(days=60)
GOLDEN = Path(__file__).parent / "golden"

TREE = {
    "python/pyproject.toml": (
        '[project]\nname = "sglang"\nrequires-python = ">=3.10"\ndependencies = [\n'
        '  "requests",\n'
        '  "flashinfer_python==0.6.8.post1", # keep it aligned with jit-cache version in '
        "Dockerfile\n"
        '  "flashinfer_cubin==0.6.8.post1",\n'
        '  "nvidia-cutlass-dsl==4.4.2",\n'
        '  "quack-kernels>=0.3.0",\n'
        "]\n"),
    "python/pyproject_other.toml": (
        '[project]\nname = "sglang"\n\n[project.optional-dependencies]\n'
        'srt = [\n  "flashinfer_python==0.6.8.post1",\n]\n'
        "blackwell = [\n"
        "  \"flashinfer_python[cu13]==0.6.8.post1; platform_machine == 'x86_64'\",\n"
        '  "nvidia-cutlass-dsl==4.4.2",  # cutlass floor of FlashInfer\n]\n'),
    "docker/Dockerfile": (
        "ARG CUDA_VERSION=12.9.1\n"
        "FROM nvidia/cuda:${CUDA_VERSION}-devel-ubuntu22.04 AS base\n"
        "ARG FLASHINFER_VERSION=0.6.8.post1\n"
        "RUN pip install flashinfer-python==${FLASHINFER_VERSION}\n\n"
        "FROM base AS framework\n"
        "ARG FLASHINFER_VERSION\n"
        "RUN pip install flashinfer-jit-cache==${FLASHINFER_VERSION} \\\n"
        "      --index-url https://flashinfer.ai/whl/cu129 \\\n"
        " && pip install flashinfer-cubin==0.6.8.post1\n"),
    "python/sglang/srt/entrypoints/engine.py": (
        "from sglang.srt.utils.common import assert_pkg_version\n\n\n"
        "def _check(server_args):\n"
        '    if server_args.attention_backend == "flashinfer":\n'
        "        assert_pkg_version(\n"
        '            "flashinfer_python",\n'
        '            "0.6.8.post1",\n'
        '            "Please reinstall the latest version.",\n'
        "        )\n"),
    "python/sglang/srt/utils/common.py": (
        "def assert_pkg_version(pkg: str, min_version: str, message: str) -> None:\n"
        '    """Assert that an installed package is at least a given version.\n\n'
        "    Args:\n"
        '        min_version: Minimum version required (e.g., "0.6.8.post1").\n'
        '    """\n'),
    "docs/notes.md": "We moved to FlashInfer 0.6.8.post1 in March; see the release notes.\n",
}


def write_tree(root: Path, files: dict[str, str] = TREE) -> Path:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(text.encode())
    return root


def snapshot(root: Path) -> dict[str, tuple[bytes, int]]:
    return {p.relative_to(root).as_posix(): (p.read_bytes(), p.stat().st_mtime_ns)
            for p in sorted(root.rglob("*")) if p.is_file()}


def publish(pypi: PypiServer) -> None:
    for v, req in (("0.6.8.post1", []), ("0.6.11", ["nvidia-cutlass-dsl>=4.5"])):
        pypi.add("flashinfer-python", v, requires=req, uploaded=OLD, extras=["cu13"])
        pypi.add("flashinfer-cubin", v, uploaded=OLD)
    for v in ("4.4.2", "4.5.0"):
        pypi.add("nvidia-cutlass-dsl", v, uploaded=OLD)
    pypi.add("quack-kernels", "0.3.0", uploaded=OLD)


def apply(capsys: pytest.CaptureFixture[str], repo: Path, url: str, *extra: str
          ) -> tuple[int, str, str]:
    code = main(["apply", "--repo", str(repo), "--index-url", url, *extra])
    out, err = capsys.readouterr()
    return code, out, err


def test_golden_diff_then_apply_then_idempotent(pypi: PypiServer, tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    publish(pypi)
    repo = write_tree(tmp_path / "repo")
    before = snapshot(repo)
    code, diff, summary = apply(capsys, repo, pypi.url, "--dry-run")
    assert code == 0, summary
    assert diff == (GOLDEN / "apply_sglang.diff").read_text()
    assert snapshot(repo) == before  # --dry-run wrote nothing
    assert "docs/notes.md:1 flashinfer-cubin, flashinfer-jit-cache, flashinfer-python " \
           "0.6.8.post1" in summary

    code, out, err = apply(capsys, repo, pypi.url, "--json")
    assert code == 0, err
    doc = json.loads(out)
    assert doc["written"] is True
    kinds = sorted({(e["file"], e["kind"]) for e in doc["edits"]})
    assert kinds == [
        ("docker/Dockerfile", "dockerfile-arg"), ("docker/Dockerfile", "dockerfile-run"),
        ("python/pyproject.toml", "requirement"), ("python/pyproject_other.toml", "requirement"),
        ("python/sglang/srt/entrypoints/engine.py", "assertion"),
        ("python/sglang/srt/utils/common.py", "doc")]
    assert {"file": "python/sglang/srt/entrypoints/engine.py", "line": 8, "kind": "assertion",
            "before": '"0.6.8.post1",', "after": '"0.6.11",'} in doc["edits"]
    assert [(m["file"], m["line"]) for m in doc["left_unchanged"]] == [("docs/notes.md", 1)]
    # the written tree is what the dry run showed
    for rel in TREE:
        assert "0.6.8.post1" not in (repo / rel).read_text() or rel == "docs/notes.md"
    assert '"flashinfer_python==0.6.11", # keep it aligned with jit-cache version in ' \
           "Dockerfile" in (repo / "python/pyproject.toml").read_text()

    after = snapshot(repo)
    code, out, _ = apply(capsys, repo, pypi.url)
    assert code == 0
    assert out.startswith("pinbump apply: no change")
    assert snapshot(repo) == after


def test_already_matching_repo_is_untouched(pypi: PypiServer, tmp_path: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    publish(pypi)
    files = {k: v.replace("0.6.8.post1", "0.6.11").replace("4.4.2", "4.5.0")
             for k, v in TREE.items()}
    repo = write_tree(tmp_path / "repo", files)
    before = snapshot(repo)
    code, out, _ = apply(capsys, repo, pypi.url)
    assert code == 0 and out.startswith("pinbump apply: no change")
    assert snapshot(repo) == before


@pytest.mark.parametrize(("case", "fragment"), [
    ("read-only", "docker/Dockerfile: file is read-only; nothing was written"),
    ("conflict", "docker/Dockerfile: ARG FLASHINFER_VERSION has different defaults"),
    ("malformed", "python/pyproject_other.toml:6: malformed TOML"),
    ("bad-python", "python/sglang/srt/entrypoints/engine.py:11: cannot parse Python"),
    ("mistyped", "python/pyproject_other.toml:14: [dependency-groups.test] must be an array of "
     "requirement strings, got an integer"),
])
def test_failures_write_nothing(case: str, fragment: str, pypi: PypiServer, tmp_path: Path,
                                capsys: pytest.CaptureFixture[str]) -> None:
    publish(pypi)
    files = dict(TREE)
    if case == "conflict":
        files["docker/Dockerfile"] += "FROM base AS other\nARG FLASHINFER_VERSION=0.6.7\n"
    if case == "malformed":
        files["python/pyproject_other.toml"] = files["python/pyproject_other.toml"].replace(
            '"flashinfer_python==0.6.8.post1",', '"flashinfer_python==0.6.8.post1" "x"')
    if case == "mistyped":
        files["python/pyproject_other.toml"] += "\n[dependency-groups]\ntest = 3\n"
    if case == "bad-python":
        files["python/sglang/srt/entrypoints/engine.py"] += "    )\n"
    repo = write_tree(tmp_path / "repo", files)
    if case == "read-only":
        path = repo / "docker/Dockerfile"
        path.chmod(stat.S_IRUSR | stat.S_IRGRP | stat.S_IROTH)
    before = snapshot(repo)
    code, out, err = apply(capsys, repo, pypi.url)
    assert code == 2, (out, err)
    assert fragment in err, err
    assert err.startswith("pinbump: error: ") and err.count("\n") == 1
    assert snapshot(repo) == before


def test_file_changed_between_read_and_write(pypi: PypiServer, tmp_path: Path) -> None:
    publish(pypi)
    repo = write_tree(tmp_path / "repo")
    with planned(PlanOptions(repo=repo, index_url=pypi.url)) as done:
        tree = read_tree(repo)
        tree.read(tree.paths)  # every file, held
        edits, _ = compute_edits(done.plan, done.ws.policy, tree.text)
    assert len(edits.files) == 5
    (repo / "python/sglang/srt/utils/common.py").write_text("# edited by a human meanwhile\n")
    before = snapshot(repo)
    with pytest.raises(WriteError, match=re.escape(
            "python/sglang/srt/utils/common.py: changed on disk since it was read; nothing "
            "was written")):
        write_all(repo, {f.path: f.new.encode() for f in edits.files}, tree.raw)
    assert snapshot(repo) == before


def test_failed_write_rolls_back(tmp_path: Path) -> None:
    """A write that fails half-way (file too large: EFBIG) restores the files already written.

    RLIMIT_FSIZE makes the failure real even for root, who ignores file modes.
    """
    (tmp_path / "a.txt").write_bytes(b"old a\r\n")
    (tmp_path / "b.txt").write_bytes(b"old b\n")
    originals = {"a.txt": b"old a\r\n", "b.txt": b"old b\n"}
    new = {"a.txt": b"new a\r\n", "b.txt": b"x" * 2_000_000}
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    previous = signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (1_000_000, hard))
    try:
        with pytest.raises(WriteError, match=r"b\.txt: cannot write .*every file was left as it"):
            write_all(tmp_path, new, originals, order=["a.txt", "b.txt"])
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
        signal.signal(signal.SIGXFSZ, previous)
    assert (tmp_path / "a.txt").read_bytes() == b"old a\r\n"
    assert (tmp_path / "b.txt").read_bytes() == b"old b\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.txt", "b.txt"]  # no temp files


def test_apply_looks_only_at_files_holding_an_old_version(pypi: PypiServer,
                                                           tmp_path: Path) -> None:
    """apply decodes only the files whose bytes hold an old version, plus pin files and
    Dockerfiles; its edits and its left-unchanged list are those of looking at every file."""
    publish(pypi)
    extra = {
        "python/sglang/other.py": 'import flashinfer\n"""Nothing old here: 0.6.7."""\n',
        "python/sglang/near.py": '"""0.6.8.post10 is not old, yet the byte search keeps it."""\n',
        "python/sglang/lazy.py": 'x = "0.6.8.post1"  # an old version only in a string\n',
        "docker/Dockerfile.rocm": "ARG FLASHINFER_VERSION=0.6.11\nFROM base\n",
        "README.md": "No versions here.\n",
    }
    repo = write_tree(tmp_path / "repo", {**TREE, **extra})
    with planned(PlanOptions(repo=repo, index_url=pypi.url, no_cache=True)) as done:
        ws = done.ws
        some = ws.holding(*apply_reads(done.plan, ws.policy))
        every = read_tree(repo)
        every.read(every.paths)
        assert compute_edits(done.plan, ws.policy, some) == \
            compute_edits(done.plan, ws.policy, every.text)
    assert set(some) < set(every.text)
    assert "python/sglang/other.py" not in some
    assert "README.md" not in some
    assert {"python/sglang/lazy.py", "python/sglang/near.py", "docker/Dockerfile.rocm",
            "python/pyproject.toml", "docs/notes.md"} <= set(some)
    assert all(some[p] == every.text[p] for p in some)


def test_unrelated_dockerfile_arg_equal_to_an_old_version_stays(
        pypi: PypiServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 11 item 7: ARG MOONCAKE_VERSION=4.4.2 equals the old cutlass version but nothing
    ties it to cutlass; it stays, and is listed with the reason. A configured name is edited."""
    publish(pypi)
    files = dict(TREE)
    files["docker/Dockerfile"] += ("ARG MOONCAKE_VERSION=4.4.2\n"
                                   "RUN pip install mooncake-transfer-engine==${MOONCAKE_VERSION}\n"
                                   "ARG CUTE=4.4.2\n")
    files["pinbump.toml"] = '[dockerfile-args]\nCUTE = "nvidia-cutlass-dsl"\n'
    repo = write_tree(tmp_path / "repo", files)
    code, out, err = apply(capsys, repo, pypi.url, "--json")
    assert code == 0, err
    doc = json.loads(out)
    docker = (repo / "docker/Dockerfile").read_text()
    assert "ARG MOONCAKE_VERSION=4.4.2\n" in docker and "ARG CUTE=4.5.0\n" in docker
    assert "ARG FLASHINFER_VERSION=0.6.11\n" in docker
    assert {"file": "docker/Dockerfile", "line": 11, "package": "nvidia-cutlass-dsl",
            "version": "4.4.2", "text": "ARG MOONCAKE_VERSION=4.4.2"} in doc["left_unchanged"]
    assert doc["notes"] == ["docker/Dockerfile:11: ARG MOONCAKE_VERSION=4.4.2 left unchanged: "
                            "used for mooncake-transfer-engine, whose old version is not 4.4.2"]


def test_version_checks_found_in_worker_processes_match_one_process(
        pypi: PypiServer, tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A large tree's Python files holding an old version are edited in worker processes
    (one per core); the edits, and an edit's failure, are what one process makes."""
    import bot.commands.apply as apply_command
    from bot.core.editset import apply_bumps

    publish(pypi)
    engine = TREE["python/sglang/srt/entrypoints/engine.py"]
    many = {**TREE, **{f"python/sglang/copy{i}/engine.py": engine for i in range(20)}}
    repo = write_tree(tmp_path / "repo", many)
    outputs = []
    for threshold in (10_000, 1):
        monkeypatch.setattr(apply_command, "MIN_PARALLEL", threshold)
        code, out, _ = apply(capsys, repo, pypi.url, "--dry-run", "--json")
        assert code == 0
        outputs.append(json.loads(out))
    assert outputs[0] == outputs[1]
    assert sum(e["kind"] == "assertion" for e in outputs[1]["edits"]) == 21
    with planned(PlanOptions(repo=repo, index_url=pypi.url)) as done:
        files = done.ws.holding(*apply_reads(done.plan, done.ws.policy))
        bumps = apply_bumps(done.plan, done.ws.policy)
        found = apply_command.parallel_assertions(files, bumps, min_files=1)
    assert sum(bool(f.edits) for f in found.values()) == 21  # common.py: a docstring only
    # a file that cannot be edited fails the same way, in either mode
    (repo / "python/sglang/copy0/engine.py").write_text(engine + "def broken(:\n")
    errors = []
    for threshold in (10_000, 1):
        monkeypatch.setattr(apply_command, "MIN_PARALLEL", threshold)
        code, _, err = apply(capsys, repo, pypi.url, "--dry-run")
        errors.append((code, err))
    assert errors[0] == errors[1] and errors[0][0] == 2, errors


def test_check_before_write_neither_waits_on_a_fifo_nor_follows_a_link(tmp_path: Path) -> None:
    """A file swapped for a FIFO between the read and the write is not waited on, and one
    swapped for a link to a copy of its bytes is not taken for the file read: both are
    changed on disk, nothing is written."""
    import os
    import threading

    outside = tmp_path / "outside.txt"
    outside.write_bytes(b"old b\n")
    for swap, name in ((lambda p: os.mkfifo(p), "fifo"), (lambda p: p.symlink_to(outside),
                                                          "link")):
        root = tmp_path / name
        root.mkdir()
        (root / "a.txt").write_bytes(b"old a\n")
        (root / "b.txt").write_bytes(b"old b\n")
        originals = {"a.txt": b"old a\n", "b.txt": b"old b\n"}
        (root / "b.txt").unlink()
        swap(root / "b.txt")
        raised: list[BaseException] = []

        def write(root: Path = root, originals: dict[str, bytes] = originals,
                  raised: list[BaseException] = raised) -> None:
            try:
                write_all(root, {"a.txt": b"new a\n", "b.txt": b"new b\n"}, originals)
            except BaseException as exc:  # looked at below
                raised.append(exc)

        writer = threading.Thread(target=write, daemon=True)
        writer.start()
        writer.join(10)
        if writer.is_alive():
            with open(root / "b.txt", "wb"):  # unblock the writer before failing
                pass
            pytest.fail(f"write_all blocked on a {name}")
        assert len(raised) == 1 and isinstance(raised[0], WriteError), raised
        assert str(raised[0]).startswith("b.txt: changed on disk since it was read")
        assert (root / "a.txt").read_bytes() == b"old a\n"
        assert outside.read_bytes() == b"old b\n"
        assert sorted(p.name for p in root.iterdir()) == ["a.txt", "b.txt"]


def test_a_file_name_that_is_not_utf8_is_printed_escaped_not_a_traceback(
        pypi: PypiServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A pin file whose name is not UTF-8 (a hostile tree) is edited and named in the
    output with the odd byte escaped, on a terminal whose encoding is strict UTF-8 (it
    ended apply with a UnicodeEncodeError traceback, after the write)."""
    import io
    import os
    import sys

    publish(pypi)
    repo = write_tree(tmp_path / "repo")
    odd = os.fsdecode(b"requirements-\xff.txt")
    (repo / odd).write_text("flashinfer-python==0.6.8.post1\n")
    raw = io.BytesIO()
    strict = io.TextIOWrapper(raw, encoding="utf-8", errors="strict")
    monkeypatch.setattr(sys, "stdout", strict)
    code = main(["apply", "--repo", str(repo), "--index-url", pypi.url, "--no-cache"])
    strict.flush()
    assert code == 0
    assert "requirements-\\udcff.txt:1" in raw.getvalue().decode("utf-8")
    assert (repo / odd).read_text() == "flashinfer-python==0.6.11\n"
