from __future__ import annotations

from pathlib import Path

import pytest
from packaging.version import Version

from bot.cli import main
from bot.commands.context import PlanOptions, load_workspace
from bot.core.config import Policy, parse_config
from bot.errors import ConfigError
from targets import write_target


def test_full_config_is_read() -> None:
    policy = parse_config({
        "index-url": "http://127.0.0.1:1/simple",
        "index": {"flashinfer_jit_cache": "https://flashinfer.ai/whl/cu129"},
        "min-release-age": 7,
        "allow-prereleases": ["Quack-Kernels"],
        "known-bad": {"flashinfer-python": {"0.6.10": "allreduce fusion hangs"}},
        "cap": {"nvidia_cutlass_dsl": "4.6"},
        "python": "3.12",
        "groups": {"tri": {"lead": "triton", "companions": ["torch"]}},
        "group": "tri",
    }, "pinbump.toml")
    assert policy.index_for("flashinfer-jit-cache") == "https://flashinfer.ai/whl/cu129"
    assert policy.index_for("flashinfer-python") == "http://127.0.0.1:1/simple"
    assert policy.min_release_age_days == 7
    assert policy.prereleases_allowed("quack-kernels")
    assert not policy.prereleases_allowed("flashinfer-python")
    assert policy.known_bad_reason("flashinfer-python", Version("0.6.10.0")) == \
        "allreduce fusion hangs"
    assert policy.caps["nvidia-cutlass-dsl"] == Version("4.6")
    assert policy.active_group.members == ("triton", "torch")
    assert "flashinfer" in policy.groups


@pytest.mark.parametrize(("raw", "where", "message"), [
    ({"min-release-age": "3"}, "pinbump.toml",
     "pinbump.toml: key 'min-release-age' must be a number of days, got '3'"),
    ({"min_release_age": 3}, "pinbump.toml", "pinbump.toml: unknown key 'min_release_age'"),
    ({"index": {"x": 1}}, "python/pyproject.toml",
     "python/pyproject.toml: key 'tool.pinbump.index.x' must be a URL or an array of URLs, got 1"),
    ({"known-bad": {"flashinfer-python": {"zero": "bad"}}}, "pinbump.toml",
     "key 'known-bad.flashinfer-python.zero': 'zero' is not a valid version"),
    ({"groups": {"g": {"lockstep": []}}}, "pinbump.toml", "key 'groups.g.lead' is required"),
    ({"groups": {"g": {"lead": "a", "follow": []}}}, "pinbump.toml",
     "unknown key 'groups.g.follow'"),
    ({"group": "nope"}, "pinbump.toml", "key 'group': no group named 'nope'"),
    ({"allow-prereleases": "yes"}, "pinbump.toml",
     "key 'allow-prereleases' must be an array of package names"),
    ({"min-release-age": True}, "pinbump.toml", "key 'min-release-age' must be a number"),
    ({"required-checks": []}, "pinbump.toml", "key 'required-checks' is empty"),
    ({"merge-method": "fast-forward"}, "pinbump.toml", "key 'merge-method' must be one of"),
    ({"runner-labels": {"GPU": ["x"]}}, "pinbump.toml", "key 'runner-labels.GPU': job names"),
    ({"reviewers": "alice"}, "pinbump.toml", "key 'reviewers' must be an array of strings"),
])
def test_invalid_config_names_the_key(raw: dict[str, object], where: str, message: str) -> None:
    with pytest.raises(ConfigError) as err:
        parse_config(raw, where)
    assert message in str(err.value)


def test_layers_defaults_then_file_then_flags(tmp_path: Path) -> None:
    write_target(tmp_path, tool='min-release-age = 5\nindex-url = "http://file.invalid/simple"\n')
    policy = load_workspace(tmp_path).policy
    assert (policy.min_release_age_days, policy.index_url) == (5, "http://file.invalid/simple")
    assert policy.source == "python/pyproject.toml"
    policy = load_workspace(tmp_path, PlanOptions(
        repo=tmp_path, min_release_age=0, index_url="http://flag.invalid/simple").overrides).policy
    assert (policy.min_release_age_days, policy.index_url) == (0, "http://flag.invalid/simple")
    assert Policy().min_release_age_days == 3


def test_pinbump_toml_wins_over_pyproject(tmp_path: Path) -> None:
    write_target(tmp_path, tool="min-release-age = 5\n", config="min-release-age = 1\n")
    policy = load_workspace(tmp_path).policy
    assert policy.min_release_age_days == 1
    assert policy.source == "pinbump.toml"


def test_config_groups_are_discovered(tmp_path: Path) -> None:
    write_target(tmp_path, pins=['"triton==3.1.0"'],
                 config='group = "tri"\n[groups.tri]\nlead = "triton"\n')
    ws = load_workspace(tmp_path)
    target, policy = ws.target, ws.policy
    assert policy.active_group.lead == "triton"
    assert [p.where for p in target.pins_of("triton")] == ["python/pyproject.toml:7"]


@pytest.mark.parametrize(("raw", "message"), [
    ({"known-bad": {"flashinfer-pyhton": {"0.6.10": "hangs"}}},
     "pinbump.toml: key 'known-bad.flashinfer-pyhton': 'flashinfer-pyhton' is not a package of "
     "any group; did you mean 'flashinfer-python'?"),
    ({"cap": {"cutlass-dsl": "4.6"}},
     "key 'cap.cutlass-dsl': 'cutlass-dsl' is not a package of any group; did you mean "
     "'nvidia-cutlass-dsl'?"),
    ({"index": {"numpy": "https://example.invalid/simple"}},
     "key 'index.numpy': 'numpy' is not a package of any group (packages of the groups: "),
    ({"allow-prereleases": ["flashinfer-jit-cach"]},
     "did you mean 'flashinfer-jit-cache'?"),
    ({"platforms": ["linux-riscv64"]}, "key 'platforms': unknown platform 'linux-riscv64'"),
    ({"cuda-variants": ["12.9"]}, "key 'cuda-variants': '12.9' is not a CUDA variant"),
])
def test_package_keys_outside_the_group_are_errors_with_a_did_you_mean(
        raw: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigError) as err:
        parse_config(raw, "pinbump.toml")
    assert message in str(err.value)


@pytest.mark.parametrize("name", ["x y", "-x", "a:refs/heads/main", "a..b", "k\n::error::x",
                                  "g" * 41, "a/b", "~"])
def test_a_group_name_that_cannot_name_a_branch_is_a_config_error(name: str) -> None:
    """The group names the bot's branch (pinbump/<group>-<version>) and goes into git's argv
    and refspecs: only plain names are accepted."""
    with pytest.raises(ConfigError, match="a group name is up to 40 letters") as info:
        parse_config({"groups": {name: {"lead": "flashinfer-python"}}}, "pinbump.toml")
    assert str(info.value).count("\n") == 0


def _tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in root.rglob("*") if p.is_file()}


@pytest.mark.parametrize("glob", ["../x.txt", "/etc/passwd", "docs/../../x.txt", "..",
                                  "C:/x.txt"])
@pytest.mark.parametrize("key", ["files", "exclude"])
@pytest.mark.parametrize("where", ["pinbump.toml", "python/pyproject.toml"])
def test_a_glob_outside_the_target_is_one_line_error(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], where: str, key: str,
        glob: str) -> None:
    line = f"{key} = [{glob!r}]\n"
    if where == "pinbump.toml":
        write_target(tmp_path, config=line)
    else:
        write_target(tmp_path, tool=line)
    before = _tree(tmp_path)
    assert main(["plan", "--repo", str(tmp_path)]) == 2
    prefix = "" if where == "pinbump.toml" else "tool.pinbump."
    assert capsys.readouterr().err == (
        f"pinbump: error: {where}: key '{prefix}{key}': {glob!r} points outside the target "
        "(globs match paths relative to its root)\n")
    assert _tree(tmp_path) == before


@pytest.mark.parametrize("glob", ["docs/*.md", "a..b/x.txt", "**/..x", "x/.../y"])
def test_a_glob_inside_the_target_is_kept(glob: str) -> None:
    assert parse_config({"files": [glob], "exclude": [glob]}, "pinbump.toml").files == (glob,)
