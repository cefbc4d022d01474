"""The stack as it is really shipped: FlashInfer's own indexes (cubin, jit-cache per CUDA variant
with local versions, 0.7 shim + per-architecture providers, nightly), served by a loopback
emulation built from wheels the tests generate, against a vLLM-shaped tree (examples/vllm) and
an SGLang-as-of-today tree (cubin and jit-cache installed by a CI script)."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from bot.cli import main
from flashinfer_index import ARM, X86, FlashInferIndex, flashinfer_index, publish_shim

EXAMPLES = Path(__file__).parent.parent / "examples"
GOLDEN = Path(__file__).parent / "golden"
DAY0 = datetime(2026, 5, 1, tzinfo=timezone.utc)
LEADS = ("0.6.8.post1", "0.6.11", "0.6.12", "0.6.13", "0.6.14", "0.6.15")


def uploaded(version: str) -> datetime:
    """Fixed upload days (goldens stay stable): 0.6.8.post1 on 2026-05-01, then 20 days apart."""
    return DAY0 + timedelta(days=20 * LEADS.index(version.split("+")[0]))


@pytest.fixture
def fi(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[FlashInferIndex]:
    with flashinfer_index(tmp_path / "fi") as index:
        monkeypatch.setenv("PINBUMP_FLASHINFER_WHL", index.whl)
        yield index


def shipped(fi: FlashInferIndex, *, leads: tuple[str, ...] = LEADS,
            jit: tuple[str, ...] = ("cu129", "cu130"), jit_tags: tuple[str, ...] = (X86, ARM),
            skip: dict[str, set[str]] | None = None) -> None:
    """FlashInfer as shipped today: flashinfer-python on PyPI; flashinfer-cubin on PyPI up to
    0.6.13, then only on FlashInfer's index; jit-cache per CUDA variant with local versions."""
    skip = skip or {}
    for v in leads:
        fi.add("pypi/simple", "flashinfer-python", v, uploaded=uploaded(v),
               requires=["nvidia-cutlass-dsl>=4.4"])
        if v in ("0.6.8.post1", "0.6.11", "0.6.12", "0.6.13"):
            fi.add("pypi/simple", "flashinfer-cubin", v, uploaded=uploaded(v))
        fi.add("whl", "flashinfer-cubin", v, uploaded=uploaded(v))
        for cu in jit:
            if v not in skip.get(cu, set()):
                fi.add(f"whl/{cu}", "flashinfer-jit-cache", f"{v}+{cu}", tags=jit_tags,
                       uploaded=uploaded(v))
    fi.add("pypi/simple", "nvidia-cutlass-dsl", "4.4.2", uploaded=DAY0)
    fi.add("pypi/simple", "quack-kernels", "0.3.0", uploaded=DAY0)
    fi.publish()


def vllm_tree(tmp_path: Path) -> Path:
    repo = tmp_path / "vllm"
    shutil.copytree(EXAMPLES / "vllm", repo)
    return repo


def sglang_today(tmp_path: Path) -> Path:
    """SGLang as of today: flashinfer-python pinned in pyproject; cubin and jit-cache installed
    from FlashInfer's index by the CI script, not pinned in pyproject."""
    repo = tmp_path / "sglang"
    (repo / "python").mkdir(parents=True)
    (repo / "python" / "pyproject.toml").write_text(
        '[project]\nname = "sglang"\nrequires-python = ">=3.10"\ndependencies = [\n'
        '  "flashinfer_python==0.6.8.post1",\n  "nvidia-cutlass-dsl==4.4.2",\n]\n')
    ci = repo / "scripts" / "ci" / "cuda"
    ci.mkdir(parents=True)
    (ci / "ci_install_dependency.sh").write_text(
        "#!/bin/bash\nset -euxo pipefail\n"
        "# Keep in sync with python/pyproject.toml\n"
        "FLASHINFER_VERSION=0.6.8.post1\n"
        'pip install "flashinfer-cubin==${FLASHINFER_VERSION}" '
        "--extra-index-url https://flashinfer.ai/whl/\n"
        'pip install "flashinfer-jit-cache==${FLASHINFER_VERSION}" \\\n'
        "    --index-url https://flashinfer.ai/whl/cu130\n")
    return repo


def plan(capsys: pytest.CaptureFixture[str], repo: Path, fi: FlashInferIndex, *args: str
         ) -> tuple[int, dict[str, object] | None, str]:
    code = main(["plan", "--repo", str(repo), "--index-url", fi.pypi, "--json",
                 "--min-release-age", "0", "--no-cache", "--retries", "0", *args])
    out, err = capsys.readouterr()
    return code, (json.loads(out) if out else None), err


def normalized(text: str, fi: FlashInferIndex) -> str:
    return text.replace(fi.base, "http://INDEX")


def test_vllm_layout_golden_plan(fi: FlashInferIndex, tmp_path: Path,
                                 capsys: pytest.CaptureFixture[str]) -> None:
    shipped(fi)
    repo = vllm_tree(tmp_path)
    code, doc, err = plan(capsys, repo, fi)
    assert code == 0, err
    text = normalized(json.dumps(doc, indent=2) + "\n", fi)
    assert text == (GOLDEN / "plan_vllm.json").read_text()


def test_vllm_layout_golden_diff_then_idempotent(fi: FlashInferIndex, tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    shipped(fi)
    repo = vllm_tree(tmp_path)
    base = ["--repo", str(repo), "--index-url", fi.pypi, "--min-release-age", "0",
            "--no-cache", "--retries", "0"]
    assert main(["apply", *base, "--dry-run"]) == 0
    diff, summary = capsys.readouterr()
    assert diff == (GOLDEN / "apply_vllm.diff").read_text(), summary
    assert main(["apply", *base]) == 0
    capsys.readouterr()
    for rel in ("requirements/cuda.txt", "docker/Dockerfile", "docker/versions.json",
                "docker/Dockerfile.nightly_torch"):
        assert "0.6.8.post1" not in (repo / rel).read_text(), rel
    assert main(["apply", *base]) == 0
    assert "no change" in capsys.readouterr().out


def test_sglang_today_golden_plan(fi: FlashInferIndex, tmp_path: Path,
                                  capsys: pytest.CaptureFixture[str]) -> None:
    shipped(fi)
    repo = sglang_today(tmp_path)
    code, doc, err = plan(capsys, repo, fi)
    assert code == 0, err
    text = normalized(json.dumps(doc, indent=2) + "\n", fi)
    assert text == (GOLDEN / "plan_sglang_today.json").read_text()


def test_sglang_today_apply_moves_the_ci_script(fi: FlashInferIndex, tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    shipped(fi)
    repo = sglang_today(tmp_path)
    assert main(["apply", "--repo", str(repo), "--index-url", fi.pypi, "--min-release-age", "0",
                 "--no-cache", "--retries", "0", "--dry-run"]) == 0
    diff, _ = capsys.readouterr()
    assert diff == (GOLDEN / "apply_sglang_today.diff").read_text()


def test_cubin_only_on_pypi_is_the_old_answer_with_the_fix(
        fi: FlashInferIndex, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """Without FlashInfer's index, cubin stops at 0.6.13 (known bad): 0.6.12, and the
    rejected list ends with where cubin went."""
    shipped(fi)
    repo = sglang_today(tmp_path)
    (repo / "python" / "pyproject.toml").write_text(
        (repo / "python" / "pyproject.toml").read_text().replace(
            '"nvidia-cutlass-dsl==4.4.2",', '"flashinfer_cubin==0.6.8.post1",'))
    shutil.rmtree(repo / "scripts")
    code, doc, err = plan(capsys, repo, fi)
    assert code == 0 and doc is not None, err
    assert doc["lead"]["target"] == "0.6.15"  # type: ignore[index]
    monkeypatch.setenv("PINBUMP_FLASHINFER_WHL", "")  # PyPI only, as pinbump used to look
    code = main(["plan", "--repo", str(repo), "--index-url", fi.pypi, "--min-release-age", "0",
                 "--no-cache", "--retries", "0"])
    out = capsys.readouterr().out
    assert code == 0
    rejected = out[out.index("rejected:"):]
    assert rejected == (
        "rejected:\n"
        "  flashinfer-python 0.6.15 (2026-08-09): flashinfer-cubin 0.6.15 is not published on "
        f"{fi.pypi}\n"
        "  flashinfer-python 0.6.14 (2026-07-20): known bad: GB300 TRTLLM_GEN_BMM cubin hang; "
        "fixed in 0.6.15 (pinbump advisory, https://github.com/flashinfer-ai/flashinfer/issues/"
        "3971)\n"
        "  flashinfer-python 0.6.13 (2026-06-30): known bad: skipped by SGLang for "
        "flashinfer-ai/flashinfer#3553 (pinbump advisory, "
        "https://github.com/sgl-project/sglang/pull/29231)\n"
        "fix: flashinfer-cubin is not on PyPI after 0.6.13; FlashInfer publishes it on "
        "https://flashinfer.ai/whl\n")


def test_cubin_index_unreachable_is_reported_and_the_plan_uses_what_it_verified(
        fi: FlashInferIndex, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    shipped(fi)
    fi.fail("/whl/flashinfer-cubin/")
    repo = vllm_tree(tmp_path)
    code, doc, err = plan(capsys, repo, fi)
    assert code == 0, err
    assert doc is not None
    assert doc["lead"]["target"] == "0.6.12"  # type: ignore[index]
    unreachable = doc["unreachable"]
    assert unreachable == [{
        "package": "flashinfer-cubin", "index": f"{fi.whl}",
        "error": "HTTP 503 after 1 attempt; check the index URL and your network, or retry "
                 "later",
        "verified": f"verified on {fi.pypi} up to 0.6.13"}]
    reasons = {r["version"]: r["reason"] for r in doc["rejected"]  # type: ignore[union-attr]
               if r["package"] == "flashinfer-python"}
    assert reasons["0.6.15"] == (f"flashinfer-cubin 0.6.15 not verified: {fi.whl} unreachable "
                                 f"and not on {fi.pypi}")
    assert doc["hints"] == [  # type: ignore[index]
        f"flashinfer-cubin is not on PyPI after 0.6.13; FlashInfer publishes it on {fi.whl}"]
    code, _, err = plan(capsys, repo, fi, "--strict")
    assert code == 2
    assert err.startswith(f"pinbump: error: --strict: flashinfer-cubin: {fi.whl} unreachable "
                          "(HTTP 503")


def test_one_cuda_variant_unreachable_is_reported_not_silent(
        fi: FlashInferIndex, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    shipped(fi)
    fi.fail("/whl/cu130/")
    repo = vllm_tree(tmp_path)
    (repo / "pinbump.toml").write_text('cuda-variants = ["cu129", "cu130"]\n')
    code, doc, err = plan(capsys, repo, fi)
    assert code == 0, err
    assert doc is not None
    assert doc["lead"]["target"] == "0.6.15"  # type: ignore[index]
    assert [(u["package"], u["index"]) for u in doc["unreachable"]] == [  # type: ignore
        ("flashinfer-jit-cache", f"{fi.whl}/cu130")]
    assert doc["indexes"]["flashinfer-jit-cache"] == f"{fi.whl}/cu129"  # type: ignore[index]


def test_variant_and_platform_rejections_name_them(fi: FlashInferIndex, tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    """0.6.15 lacks its cu130 jit-cache; 0.6.12's cu130 jit-cache has no aarch64 wheel."""
    shipped(fi, skip={"cu130": {"0.6.15", "0.6.12"}})
    fi.add("whl/cu130", "flashinfer-jit-cache", "0.6.12+cu130", tags=(X86,),
           uploaded=uploaded("0.6.12"))
    fi.publish()
    repo = vllm_tree(tmp_path)
    (repo / "pinbump.toml").write_text('cuda-variants = ["cu129", "cu130"]\n'
                                       'advisories = false\n')
    code, doc, err = plan(capsys, repo, fi)
    assert code == 0, err
    assert doc is not None
    reasons = {r["version"]: r["reason"] for r in doc["rejected"]  # type: ignore[union-attr]
               if r["package"] == "flashinfer-python"}
    assert reasons["0.6.15"] == f"flashinfer-jit-cache 0.6.15+cu130 is not published on " \
                                f"{fi.whl}/cu130"
    assert doc["lead"]["target"] == "0.6.14"  # type: ignore[index]
    (repo / "pinbump.toml").write_text('cuda-variants = ["cu130"]\n'
                                       '[known-bad.flashinfer-python]\n"0.6.14" = "x"\n'
                                       '"0.6.13" = "x"\n')
    code, doc, err = plan(capsys, repo, fi)
    assert code == 0, err
    reasons = {r["version"]: r["reason"] for r in doc["rejected"]  # type: ignore[union-attr]
               if r["package"] == "flashinfer-python"}
    assert reasons["0.6.12"] == ("flashinfer-jit-cache 0.6.12+cu130: no wheel for "
                                 "Linux aarch64")
    assert doc["lead"]["target"] == "0.6.11"  # type: ignore[index]
    (repo / "pinbump.toml").write_text('cuda-variants = ["cu130"]\nplatforms = ["linux-x86_64"]\n'
                                       '[known-bad.flashinfer-python]\n"0.6.14" = "x"\n'
                                       '"0.6.13" = "x"\n')
    code, doc, err = plan(capsys, repo, fi)
    assert code == 0, err
    assert doc["lead"]["target"] == "0.6.12"  # type: ignore[index]


def test_07_shim_needs_every_provider_at_its_full_version(
        fi: FlashInferIndex, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """FlashInfer's real 0.7 layout (per-CPU shims, flashinfer-jit-cache-sm* providers on the
    same per-CUDA index): 0.7.2's aarch64 shim names sm121a, never published (only that
    platform's shim says so); 0.7.1's sm100a provider was published for another build
    (+cu130 on the cu129 index); 0.7.0 is complete."""
    shipped(fi, leads=("0.6.8.post1", "0.6.11"))
    when = DAY0 + timedelta(days=150)
    for v in ("0.7.0", "0.7.1", "0.7.2"):
        fi.add("pypi/simple", "flashinfer-python", v, uploaded=when)
        fi.add("whl", "flashinfer-cubin", v, uploaded=when)
    publish_shim(fi, "0.7.0", "cu129", uploaded=when)
    publish_shim(fi, "0.7.1", "cu129", uploaded=when, versions={"sm100a": "0.7.1+cu130"})
    publish_shim(fi, "0.7.2", "cu129", uploaded=when, skip={"sm121a"})
    fi.publish()
    repo = vllm_tree(tmp_path)
    code, doc, err = plan(capsys, repo, fi)
    assert code == 0, err
    assert doc is not None
    assert doc["lead"]["target"] == "0.7.0"  # type: ignore[index]
    reasons = {r["version"]: r["reason"] for r in doc["rejected"]  # type: ignore[union-attr]
               if r["package"] == "flashinfer-python"}
    assert reasons["0.7.2"] == (f"flashinfer-jit-cache 0.7.2+cu129: provider "
                                f"flashinfer-jit-cache-sm121a 0.7.2+cu129 is not published on "
                                f"{fi.whl}/cu129")
    assert reasons["0.7.1"] == (f"flashinfer-jit-cache 0.7.1+cu129: provider "
                                f"flashinfer-jit-cache-sm100a 0.7.1+cu129 is not published on "
                                f"{fi.whl}/cu129")
    jit = next(c for c in doc["changes"] if c["package"] == "flashinfer-jit-cache")  # type: ignore
    assert jit["index"] == f"{fi.whl}/cu129"
    (repo / "pinbump.toml").write_text('platforms = ["linux-x86_64"]\n')
    code, doc, err = plan(capsys, repo, fi)  # x86-64 only: its shim does not name sm121a
    assert code == 0, err
    assert doc is not None and doc["lead"]["target"] == "0.7.2"  # type: ignore[index]


def test_nightly_channel_plans_against_the_nightly_index(
        fi: FlashInferIndex, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    shipped(fi)
    night = "0.6.16.dev20261128"
    fi.add("whl/nightly", "flashinfer-python", night, uploaded=DAY0 + timedelta(days=200))
    fi.add("whl/nightly", "flashinfer-cubin", night, uploaded=DAY0 + timedelta(days=200))
    fi.add("whl/nightly/cu129", "flashinfer-jit-cache", f"{night}+cu129", tags=(X86, ARM),
           uploaded=DAY0 + timedelta(days=200))
    fi.publish()
    repo = vllm_tree(tmp_path)
    code, doc, err = plan(capsys, repo, fi, "--channel", "nightly")
    assert code == 0, err
    assert doc is not None
    assert doc["channel"] == "nightly"
    assert doc["lead"]["target"] == night  # type: ignore[index]
    assert doc["indexes"] == {  # type: ignore[index]
        "flashinfer-cubin": f"{fi.whl}/nightly", "flashinfer-jit-cache": f"{fi.whl}/nightly/cu129",
        "flashinfer-python": f"{fi.whl}/nightly"}
    code, doc, err = plan(capsys, repo, fi)  # the stable channel never takes a nightly
    assert code == 0 and doc is not None
    assert doc["lead"]["target"] == "0.6.15"  # type: ignore[index]


def test_as_of_before_the_pinned_upload_says_not_yet_published(
        fi: FlashInferIndex, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    shipped(fi)
    repo = sglang_today(tmp_path)
    code, _, err = plan(capsys, repo, fi, "--as-of", "2026-04-20")
    assert code == 2
    assert err == ("pinbump: error: no complete and consistent set for group 'flashinfer': "
                   "flashinfer-python 0.6.8.post1 (pinned) was not yet published on 2026-04-20 "
                   "(uploaded 2026-05-01); choose a later --as-of\n")


def test_hash_vcs_and_arbitrary_equality_pins_plan_and_apply(
        fi: FlashInferIndex, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Valid syntax is never an "invalid file": a VCS ref moves; hash-pinned and === pins are
    left unchanged, each with its reason."""
    shipped(fi)
    repo = tmp_path / "repo"
    (repo / "requirements").mkdir(parents=True)
    (repo / "requirements" / "cuda.txt").write_text(
        "flashinfer-python==0.6.8.post1 \\\n    --hash=sha256:" + "a" * 64 + "\n")
    (repo / "requirements" / "dev.txt").write_text(
        "-e git+https://github.com/flashinfer-ai/flashinfer@v0.6.8.post1#egg=flashinfer-python\n"
        "flashinfer-cubin===0.6.8.post1\n")
    code, doc, err = plan(capsys, repo, fi, "--strict")  # every index answered
    assert code == 0, err
    assert doc is not None
    assert {(u["package"], u["specifier"], u["reason"]) for u in doc["unchanged"]} == {
        ("flashinfer-python", "==0.6.8.post1 at requirements/cuda.txt:1",
         "not edited: hash-pinned (--hash): regenerate the hashes, e.g. pip-compile "
         "--generate-hashes"),
        ("flashinfer-cubin", "===0.6.8.post1 at requirements/dev.txt:2",
         "not edited: arbitrary-equality pin (===): edit it by hand"),
    }
    assert main(["apply", "--repo", str(repo), "--index-url", fi.pypi, "--min-release-age", "0",
                 "--no-cache", "--retries", "0", "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert [(e["file"], e["line"], e["after"]) for e in result["edits"]] == [
        ("requirements/dev.txt", 1, "-e git+https://github.com/flashinfer-ai/flashinfer@v0.6.15"
                                    "#egg=flashinfer-python")]
    assert {(m["file"], m["line"]) for m in result["left_unchanged"]} == {
        ("requirements/cuda.txt", 1), ("requirements/dev.txt", 2)}


def test_files_not_read_are_reported_with_their_pins(
        fi: FlashInferIndex, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A Latin-1 Dockerfile, an oversized requirements file and a symlinked one: each is named;
    the Dockerfile's ARG holding the old version is listed as left unchanged."""
    shipped(fi)
    repo = vllm_tree(tmp_path)
    (repo / "docker" / "Dockerfile.legacy").write_bytes(
        b"# Gr\xfc\xdfe from the build team\nARG FLASHINFER_VERSION=0.6.8.post1\nFROM x\n")
    (repo / "requirements" / "huge.txt").write_bytes(b"# pad\n" * 400_000)
    (repo / "requirements" / "linked.txt").symlink_to(repo / "requirements" / "cuda.txt")
    code, doc, err = plan(capsys, repo, fi)
    assert code == 0, err
    assert doc is not None
    assert doc["skipped"] == [  # type: ignore[index]
        {"file": "docker/Dockerfile.legacy",
         "reason": "not UTF-8 text (invalid start byte)"},
        {"file": "requirements/huge.txt", "reason": "over 2 MB (2400000 bytes)"},
        {"file": "requirements/linked.txt", "reason": "a symbolic link (not followed)"}]
    assert main(["apply", "--repo", str(repo), "--index-url", fi.pypi, "--min-release-age", "0",
                 "--no-cache", "--retries", "0", "--json", "--dry-run"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert {"file": "docker/Dockerfile.legacy", "line": 2,
            "package": "flashinfer-cubin, flashinfer-jit-cache, flashinfer-python",
            "version": "0.6.8.post1", "text": "ARG FLASHINFER_VERSION=0.6.8.post1"} \
        in result["left_unchanged"]
    assert "docker/Dockerfile.legacy: not read (not UTF-8 text (invalid start byte)); nothing " \
           "in it was edited, check it by hand" in result["notes"]
    assert not any(m["file"].rsplit("/", 1)[-1] == "linked.txt"
                   for m in result["left_unchanged"])  # a link is never followed


def test_rejections_collapse_by_reason_with_upload_days() -> None:
    from bot.core.models import Plan, Rejection
    from bot.render.report import collapse_rejections

    day = datetime(2026, 8, 1, tzinfo=timezone.utc)
    plan = Plan("flashinfer", "flashinfer-python", "0.6.8.post1", "0.6.12", rejected=[
        Rejection("flashinfer-python", "0.6.15", "flashinfer-cubin 0.6.15 is not published on "
                  "https://pypi.org/simple", day),
        Rejection("flashinfer-python", "0.6.14", "flashinfer-cubin 0.6.14 is not published on "
                  "https://pypi.org/simple", day - timedelta(days=9)),
        Rejection("flashinfer-python", "0.7.0rc1", "pre-release (allow with allow-prereleases)"),
        Rejection("nvidia-cutlass-dsl", "4.6.0", "excluded by <4.6 (from x)")])
    assert collapse_rejections(plan) == [
        "flashinfer-python 0.6.15 (2026-08-01), 0.6.14 (2026-07-23): flashinfer-cubin at that "
        "version is not published on https://pypi.org/simple",
        "flashinfer-python 0.7.0rc1: pre-release (allow with allow-prereleases)",
        "nvidia-cutlass-dsl 4.6.0: excluded by <4.6 (from x)"]


def test_find_links_page_of_the_target_serves_a_package(
        fi: FlashInferIndex, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """FlashInfer's host off; the target's own --find-links page lists the newer cubins."""
    shipped(fi)
    flat = fi.root / "flat"
    flat.mkdir()
    wheels = sorted((fi.root / "whl" / "files").glob("flashinfer_cubin-*.whl"))
    flat.joinpath("index.html").write_text("".join(
        f'<a href="../whl/files/{w.name}">{w.name}</a>\n' for w in wheels))
    monkeypatch.setenv("PINBUMP_FLASHINFER_WHL", "")
    repo = tmp_path / "repo"
    (repo / "requirements").mkdir(parents=True)
    (repo / "requirements" / "cuda.txt").write_text(
        f"--find-links {fi.base}/flat/\nflashinfer-python==0.6.8.post1\n"
        "flashinfer-cubin==0.6.8.post1\n")
    code, doc, err = plan(capsys, repo, fi)
    assert code == 0, err
    assert doc is not None
    assert doc["lead"]["target"] == "0.6.15"  # type: ignore[index]
    assert doc["indexes"]["flashinfer-cubin"] == f"{fi.base}/flat/"  # type: ignore[index]
