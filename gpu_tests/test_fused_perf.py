"""The fused-vs-unfused timing driver on the CPU (gloo, torch stand-ins): two installs' rank
sets interleaved, the gate's statistics, the sanity check, the tables, and a hung rank turned
into a failure with every rank's stack."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("torch", reason="torch is not installed")

import fused_perf
from fused_perf import WorkerHung, compare_all, main, sanity


def _args(tmp_path: Path, *extra: str) -> list[str]:
    old, new = tmp_path / "site-old", tmp_path / "site-new"
    old.mkdir(exist_ok=True)
    new.mkdir(exist_ok=True)
    return ["--baseline", str(old), "--candidate", str(new), "--world", "2", "--out",
            str(tmp_path / "out"), "--backend", "gloo", "--tokens", "1,8", "--hidden", "16",
            "--rounds", "6", "--samples", "5", "--inner", "2", *extra]


def test_two_installs_interleaved_with_the_gates_statistics(tmp_path: Path) -> None:
    assert main(_args(tmp_path, "--impl", "cpu")) == 0
    report = json.loads((tmp_path / "out" / "fused-2gpu.json").read_text())
    assert report["labels"] == ["baseline", "candidate"]
    assert report["samples_each"] == 30
    for label in ("baseline", "candidate"):
        for case in ("t1_h16", "t8_h16"):
            assert len(report["samples"][label][case]["fused"]) == 30
            assert len(report["samples"][label][case]["unfused"]) == 30
    # rounds alternate which install goes first
    firsts = [e for e in report["order"] if e.split(":")[1] == "t1_h16"]
    assert firsts[0].endswith(":baseline") and firsts[4].endswith(":candidate")
    comps = report["comparisons"]
    assert set(comps) == {"fused_vs_unfused/baseline", "fused_vs_unfused/candidate",
                          "new_vs_old/fused", "new_vs_old/unfused"}
    for rows in comps.values():
        assert [c["case"] for c in rows] == ["t1_h16", "t8_h16"]
        assert all(c["verdict"] in ("no change", "regression", "improvement") for c in rows)
    table = (tmp_path / "out" / "fused-2gpu.md").read_text()
    assert "| 8 | 16 |" in table and "New vs old" in table


def test_one_install_gives_fused_vs_unfused_only(tmp_path: Path) -> None:
    args = _args(tmp_path, "--impl", "cpu")
    args[0:2] = []  # no --baseline
    main(args)
    report = json.loads((tmp_path / "out" / "fused-2gpu.json").read_text())
    assert set(report["comparisons"]) == {"fused_vs_unfused/candidate"}


def test_a_rank_that_stops_answering_fails_with_every_ranks_stack(tmp_path: Path) -> None:
    with pytest.raises(WorkerHung, match=r"ranks \[0, 1\] did not answer time") as info:
        main(_args(tmp_path, "--impl", "cpu-hang", "--timeout", "5"))
    text = str(info.value)
    assert "stuck_in_time" in text  # the hung rank's own frame
    assert "baseline rank 0 stack" in text and "barrier" in text  # its peer, in the barrier


@pytest.mark.parametrize(("case", "seconds", "ok"), [
    ("t4096_h8192", 200e-6, True),    # 64 MiB: 1.3 TB/s HBM, 335 GB/s per link
    ("t4096_h8192", 40e-6, False),    # 6.7 TB/s through HBM: impossible
    ("t4096_h8192", 100e-6, False),   # HBM fine (2.7 TB/s) but 671 GB/s over the links
    ("t1_h4096", 5e-6, True),
])
def test_sanity_rejects_figures_beyond_the_measured_ceilings(case: str, seconds: float,
                                                             ok: bool) -> None:
    why = sanity(case, 2, seconds, copy_bw=4.2e12, link_bw=400e9)
    assert (why is None) == ok


def test_an_impossible_figure_is_invalid_not_a_speedup() -> None:
    fast, slow = [40e-6] * 30, [300e-6] * 30
    samples = {"candidate": {"t4096_h8192": {"fused": fast, "unfused": slow}}}
    comps = compare_all(samples, ["candidate"], 2, 4.2e12, 400e9, 0.05)
    c = comps["fused_vs_unfused/candidate"][0]
    assert c["verdict"] == "invalid" and "HBM" in c["note"]


def test_perfstats_comes_from_the_project() -> None:
    ps = fused_perf._perfstats()
    assert hasattr(ps, "compare") and hasattr(ps, "physically_possible")
