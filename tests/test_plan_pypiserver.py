"""pinbump plan end to end against a real pypiserver serving wheels built here."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from bot.cli import main
from bot.commands.context import PlanOptions
from planning import planned
from servers import PypiServer
from targets import write_target

OLD = datetime.now(timezone.utc) - timedelta(days=60)


def publish_stack(pypi: PypiServer, leads: dict[str, list[str]], cubins: list[str],
                  cutlass: list[str], quack: list[str] | None = None,
                  uploaded: dict[str, datetime] | None = None) -> None:
    """leads: version -> Requires-Dist lines of flashinfer-python at that version."""
    uploaded = uploaded or {}
    for version, requires in leads.items():
        pypi.add("flashinfer-python", version, requires=requires,
                 uploaded=uploaded.get(version, OLD), extras=["cu13"])
    for version in cubins:
        pypi.add("flashinfer-cubin", version, uploaded=uploaded.get(version, OLD))
    for version in cutlass:
        pypi.add("nvidia-cutlass-dsl", version, uploaded=OLD, extras=["cu13"])
    for version in quack or ["0.3.0"]:
        pypi.add("quack-kernels", version, uploaded=OLD)


def run_plan(capsys: pytest.CaptureFixture[str], repo: Path, url: str, *extra: str
             ) -> tuple[int, dict | None, str]:
    code = main(["plan", "--repo", str(repo), "--index-url", url, "--json", *extra])
    out, err = capsys.readouterr()
    return code, (json.loads(out) if code == 0 else None), err


def by_package(doc: dict) -> dict[str, dict]:
    return {c["package"]: c for c in doc["changes"]}


def test_lockstep_gap_prerelease_and_too_new(pypi: PypiServer, tmp_path: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    now = datetime.now(timezone.utc)
    publish_stack(
        pypi,
        leads={"0.6.8.post1": ["nvidia-cutlass-dsl>=4.2"],
               "0.6.11": ["nvidia-cutlass-dsl>=4.4.2"],
               "0.6.12": ["nvidia-cutlass-dsl>=4.5"],
               "0.7.0rc1": [], "0.6.13": []},
        cubins=["0.6.8.post1", "0.6.11", "0.7.0rc1", "0.6.13"],
        cutlass=["4.4.2", "4.5.0"],
        uploaded={"0.6.13": now - timedelta(hours=30)},
    )
    repo = write_target(tmp_path / "repo", config="advisories = false\n")  # 0.6.13 is bad
    code, doc, err = run_plan(capsys, repo, pypi.url)
    assert code == 0, err
    assert doc is not None
    changes = by_package(doc)
    assert changes["flashinfer-python"]["target"] == "0.6.11"
    assert changes["flashinfer-python"]["specifier_after"] == "==0.6.11"
    assert changes["flashinfer-python"]["files"] == ["python/pyproject.toml:7"]
    assert changes["flashinfer-cubin"]["target"] == "0.6.11"
    assert changes["nvidia-cutlass-dsl"]["specifier_after"] == "==4.5.0"
    assert "quack-kernels" not in changes
    reasons = {(r["package"], r["version"]): r["reason"] for r in doc["rejected"]}
    assert reasons[("flashinfer-python", "0.6.12")].startswith(
        "flashinfer-cubin 0.6.12 is not published on " + pypi.url)
    assert reasons[("flashinfer-python", "0.7.0rc1")].startswith("pre-release")
    assert reasons[("flashinfer-python", "0.6.13")].startswith("too new: uploaded 30 hours")
    # --min-release-age 0 takes the young release
    code, doc, err = run_plan(capsys, repo, pypi.url, "--min-release-age", "0")
    assert code == 0 and doc is not None
    assert by_package(doc)["flashinfer-python"]["target"] == "0.6.13"


def test_as_of_replays_the_index(pypi: PypiServer, tmp_path: Path,
                                 capsys: pytest.CaptureFixture[str]) -> None:
    day = datetime(2026, 3, 1, tzinfo=timezone.utc)
    publish_stack(pypi, leads={"0.6.8.post1": [], "0.6.11": [], "0.6.12": []},
                  cubins=["0.6.8.post1", "0.6.11", "0.6.12"], cutlass=["4.4.2"],
                  uploaded={"0.6.8.post1": day - timedelta(days=30),
                            "0.6.11": day - timedelta(days=10),
                            "0.6.12": day + timedelta(days=1)})
    repo = write_target(tmp_path / "repo")
    code, doc, err = run_plan(capsys, repo, pypi.url, "--as-of", "2026-03-01")
    assert code == 0 and doc is not None, err
    assert doc["lead"]["target"] == "0.6.11"
    assert ("flashinfer-python", "0.6.12") not in {(r["package"], r["version"])
                                                   for r in doc["rejected"]}


def test_known_bad_and_floor_raise_from_config(pypi: PypiServer, tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    publish_stack(pypi,
                  leads={"0.6.8.post1": [], "0.6.10": ["quack-kernels>=0.4.0"],
                         "0.6.10.post1": ["quack-kernels>=0.4.0"]},
                  cubins=["0.6.8.post1", "0.6.10", "0.6.10.post1"], cutlass=["4.4.2"],
                  quack=["0.3.0", "0.4.0", "0.5.0"])
    repo = write_target(tmp_path / "repo", config=(  # the shipped advisory rejects 0.6.10
        'advisories = false\n[known-bad.flashinfer-python]\n'
        '"0.6.10.post1" = "allreduce fusion hangs; fixed in 0.6.11"\n'))
    code, doc, err = run_plan(capsys, repo, pypi.url)
    assert code == 0, err
    assert doc is not None
    changes = by_package(doc)
    assert changes["flashinfer-python"]["target"] == "0.6.10"
    assert changes["quack-kernels"]["specifier_before"] == ">=0.3.0"
    assert changes["quack-kernels"]["specifier_after"] == ">=0.4.0"
    assert {"package": "flashinfer-python", "version": "0.6.10.post1",
            "reason": "known bad: allreduce fusion hangs; fixed in 0.6.11 (pinbump.toml)",
            "uploaded": OLD.strftime("%Y-%m-%d")} in doc["rejected"]


def test_conflicting_constraints_exit_2_and_name_them(pypi: PypiServer, tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    publish_stack(pypi, leads={"0.6.8.post1": ["nvidia-cutlass-dsl>=4.5"],
                               "0.6.11": ["nvidia-cutlass-dsl>=4.5"]},
                  cubins=["0.6.8.post1", "0.6.11"], cutlass=["4.4.2", "4.5.0"])
    repo = write_target(tmp_path / "repo", config='[cap]\nnvidia-cutlass-dsl = "4.5"\n')
    code, _, err = run_plan(capsys, repo, pypi.url)
    assert code == 2
    assert err.startswith("pinbump: error: no complete and consistent set for group 'flashinfer'")
    assert "nvidia-cutlass-dsl: no version satisfies >=4.5 (from flashinfer-python 0.6.11); " \
           "<4.5 (from cap in pinbump.toml)" in err
    assert err.count("\n") == 1


def test_metadata_is_read_with_range_requests_and_cached(pypi: PypiServer, tmp_path: Path
                                                         ) -> None:
    publish_stack(pypi, leads={"0.6.8.post1": [], "0.6.11": ["nvidia-cutlass-dsl>=4.4"]},
                  cubins=["0.6.8.post1", "0.6.11"], cutlass=["4.4.2"])
    big = pypi.add("flashinfer-python", "0.6.12", requires=["nvidia-cutlass-dsl>=4.4"],
                   padding=4_000_000, uploaded=OLD)
    pypi.add("flashinfer-cubin", "0.6.12", uploaded=OLD)
    repo = write_target(tmp_path / "repo")
    opts = PlanOptions(repo=repo, index_url=pypi.url, cache_dir=tmp_path / "cache")
    with planned(opts) as cold:
        http = cold.services.http
        assert cold.plan.lead_target == "0.6.12"
        assert cold.services.index.metadata_sources[f"{pypi.base}/packages/{big.name}"] == "range"
        cold_bytes, cold_requests = http.stats.bytes_received, http.stats.requests
    assert big.stat().st_size > 4_000_000
    assert cold_bytes < 400_000, cold_bytes  # the 4 MB wheel was not downloaded
    with planned(opts) as warm:
        http = warm.services.http
        assert warm.plan.lead_target == "0.6.12"
        warm_requests = http.stats.requests
        assert http.stats.bytes_received < cold_bytes / 4
    assert warm_requests < cold_requests
    assert warm.services.index.metadata_sources == {}  # all metadata came from the disk cache


def test_unknown_lockstep_package_pinned_is_an_error(pypi: PypiServer, tmp_path: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    publish_stack(pypi, leads={"0.6.8.post1": []}, cubins=["0.6.8.post1"], cutlass=["4.4.2"])
    repo = write_target(tmp_path / "repo", pins=(
        '"flashinfer_python==0.6.8.post1"', '"flashinfer-jit-cache==0.6.8.post1"'))
    code, _, err = run_plan(capsys, repo, pypi.url)
    assert code == 2
    assert err == (f"pinbump: error: flashinfer-jit-cache: not found on {pypi.url} (HTTP 404 "
                   f"for {pypi.url}/flashinfer-jit-cache/); check the name or set its index in "
                   "[tool.pinbump.index]\n")


def test_optional_lockstep_missing_is_reported_not_verified(pypi: PypiServer, tmp_path: Path,
                                                           capsys: pytest.CaptureFixture[str]
                                                           ) -> None:
    publish_stack(pypi, leads={"0.6.8.post1": [], "0.6.11": []},
                  cubins=["0.6.8.post1", "0.6.11"], cutlass=["4.4.2"])
    repo = write_target(tmp_path / "repo")
    code, doc, _ = run_plan(capsys, repo, pypi.url)
    assert code == 0 and doc is not None
    assert [n["package"] for n in doc["not_verified"]] == ["flashinfer-jit-cache"]
    code = main(["plan", "--repo", str(repo), "--index-url", pypi.url])
    text = capsys.readouterr().out
    assert code == 0
    assert "not verified  flashinfer-jit-cache" in text
    assert "flashinfer-python" in text and "==0.6.11" in text


def test_jit_cache_on_its_own_index(pypi: PypiServer, tmp_path: Path,
                                    capsys: pytest.CaptureFixture[str]) -> None:
    """An index per package: jit-cache comes from a second real server."""
    from servers import pypiserver

    publish_stack(pypi, leads={"0.6.8.post1": [], "0.6.11": [], "0.6.12": []},
                  cubins=["0.6.8.post1", "0.6.11", "0.6.12"], cutlass=["4.4.2"])
    with pypiserver(tmp_path / "flashinfer-whl") as own:
        own.add("flashinfer-jit-cache", "0.6.8.post1", tag="cp39-abi3-manylinux_2_28_x86_64",
                uploaded=OLD)
        own.add("flashinfer-jit-cache", "0.6.11", tag="cp39-abi3-manylinux_2_28_x86_64",
                uploaded=OLD)
        repo = write_target(tmp_path / "repo",
                            config=f'platforms = ["linux-x86_64"]\n'
                                   f'[index]\nflashinfer-jit-cache = "{own.url}"\n')
        code, doc, err = run_plan(capsys, repo, pypi.url)
    assert code == 0, err
    assert doc is not None
    assert doc["lead"]["target"] == "0.6.11"
    assert doc["not_verified"] == []
    assert any(r["version"] == "0.6.12" and "flashinfer-jit-cache 0.6.12 is not published on "
               + own.url in r["reason"] for r in doc["rejected"])


def test_malformed_pyproject_names_file_and_line(tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    repo = tmp_path / "repo"
    (repo / "python").mkdir(parents=True)
    (repo / "python" / "pyproject.toml").write_text(
        '[project]\ndependencies = [\n  "flashinfer_python==0.6.8"\n  "x",\n]\n')
    code = main(["plan", "--repo", str(repo), "--index-url", "http://127.0.0.1:9/simple"])
    err = capsys.readouterr().err
    assert code == 2
    assert err.startswith("pinbump: error: python/pyproject.toml:4: malformed TOML")
    assert err.count("\n") == 1
