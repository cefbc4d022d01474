"""The allreduce tests' own logic on the CPU (gloo, torch stand-ins for FlashInfer): distinct
data per case, the float32 references, and the sub-group classification, which must tell a
correct implementation from one that ignores the sub-group."""

from __future__ import annotations

import pytest

pytest.importorskip("torch", reason="torch is not installed")

import torch

from allreduce_cases import (
    SUBGROUP_TOKENS,
    TOKENS,
    case_seed,
    fused_residual_rmsnorm,
    make_inputs,
    subgroup_case,
    summarize_subgroup,
)
from harness import run_ranks


def test_every_token_count_and_rank_draws_its_own_data() -> None:
    seeds = {case_seed("c", n, 4096, "x", r) for n in TOKENS for r in range(4)}
    assert len(seeds) == len(TOKENS) * 4
    x64, _, g64 = make_inputs("c", 64, 256, "float32", 0, 0, "cpu")
    x128, _, g128 = make_inputs("c", 128, 256, "float32", 0, 0, "cpu")
    assert not torch.equal(x64, x128[:64])  # 128 tokens do not re-check 64's rows
    assert not torch.equal(g64, g128)
    other_rank, _, _ = make_inputs("c", 64, 256, "float32", 1, 0, "cpu")
    assert not torch.equal(x64, other_rank)


def test_residual_and_gamma_are_shared_within_a_group_only() -> None:
    _, r0, g0 = make_inputs("c", 16, 64, "float32", 0, 0, "cpu")
    _, r1, g1 = make_inputs("c", 16, 64, "float32", 1, 0, "cpu")
    _, r2, g2 = make_inputs("c", 16, 64, "float32", 2, 1, "cpu")
    assert torch.equal(r0, r1) and torch.equal(g0, g1)
    assert not torch.equal(r0, r2) and not torch.equal(g0, g2)


def test_the_all_ranks_body_matches_its_reference() -> None:
    results = run_ranks(fused_residual_rmsnorm, 2, timeout=120, backend="gloo",
                        dtype="float32", hidden=64, tokens=[1, 129], strategy="switch",
                        impl="cpu")
    for rows in results:
        assert set(rows) == {"1", "129"}
        assert all(r["norm_rel_err"] < 1e-6 and r["residual_rel_err"] < 1e-6
                   for r in rows.values())
        assert rows["1"]["oneshot"] is True and rows["129"]["oneshot"] is False


@pytest.mark.parametrize("strategy", ["oneshot", "twoshot"])
def test_subgroup_sums_that_honour_the_group_match(strategy: str) -> None:
    results = run_ranks(subgroup_case, 4, timeout=120, backend="gloo", tp=2, hidden=64,
                        strategy=strategy, with_group=True, dtype="float32", impl="cpu")
    obs = summarize_subgroup(results)
    assert obs["outcome"] == "matches the sub-group sums"
    assert set(obs["ranks"]) == {"0", "1", "2", "3"}
    assert set(obs["ranks"]["3"]) == {str(n) for n in SUBGROUP_TOKENS[strategy]}


def test_subgroup_sums_over_the_world_are_caught() -> None:
    """A workspace that ignores the sub-group (sums over WORLD) is told apart: the check that
    the contract test asserts fails for it, and the observation says what it matched."""
    results = run_ranks(subgroup_case, 4, timeout=120, backend="gloo", tp=2, hidden=64,
                        strategy="oneshot", with_group=False, dtype="float32",
                        impl="cpu-world")
    obs = summarize_subgroup(results)
    assert obs["outcome"] == "matches the world sums"
    assert obs["ranks"]["0"]["16"]["match"] == "world"
    assert obs["ranks"]["0"]["16"]["norm_err"] > 0.05


def test_silently_wrong_sums_name_the_ranks_and_sizes() -> None:
    rows = [{"16": {"match": "subgroup", "subgroup_norm_err": 0.004,
                    "subgroup_residual_err": 0.005}},
            {"16": {"match": "neither", "subgroup_norm_err": 1.33,
                    "subgroup_residual_err": 0.9}}]
    obs = summarize_subgroup(rows)
    assert obs["outcome"] == "wrong sums (silently): rank 1 at 16 tokens"
    assert obs["ranks"]["1"]["16"] == {"match": "neither", "norm_err": 1.3,
                                       "residual_err": 0.9}
