"""The shipped workflows and the project's own CI: actionlint, zizmor, our conventions, and
every pinbump invocation parsed by the real command-line parser."""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from bot.cli import build_parser, main
from bot.commands.nightly import NIGHTLY_INPUTS
from bot.commands.pr import GATE_INPUTS
from bot.core.config import Policy

ROOT = Path(__file__).resolve().parents[1]
SHIPPED = sorted((ROOT / "workflows").glob("*.yml"))
OWN = sorted((ROOT / ".github" / "workflows").glob("*.yml"))
BIN = Path(sys.executable).parent


def tool(name: str) -> str:
    found = shutil.which(name, path=f"{BIN}:{shutil.os.environ.get('PATH', '')}")
    assert found, f"{name} is not installed (it comes with the test extras)"
    return found


def load(path: Path) -> dict:
    doc = yaml.safe_load(path.read_text())
    doc["on"] = doc.pop(True, doc.get("on"))  # YAML 1.1 reads the key `on` as True
    return doc


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    repo = tmp_path_factory.mktemp("target")
    assert main(["install-workflows", "--repo", str(repo), "--runner-labels",
                 "h100=self-hosted,linux,gpu,h100", "--runner-labels",
                 "b200x8=self-hosted,linux,gpu,b200,multi-gpu", "--python", "3.11",
                 "--pyproject", "python/pyproject.toml", "--pinbump-ref", "v0.1.0"]) == 0
    return sorted((repo / ".github" / "workflows").glob("*.yml"))


def test_there_are_workflows(installed: list[Path]) -> None:
    assert [p.name for p in SHIPPED] == ["pinbump-bump.yml", "pinbump-commands.yml",
                                         "pinbump-gpu-gate.yml"]
    assert [p.name for p in OWN] == ["ci.yml"]
    assert [p.name for p in installed] == [p.name for p in SHIPPED]


def test_actionlint_reports_nothing(installed: list[Path]) -> None:
    files = [str(p) for p in (*SHIPPED, *OWN, *installed)]
    env = {**shutil.os.environ, "PATH": f"{BIN}:{shutil.os.environ.get('PATH', '')}"}
    proc = subprocess.run([tool("actionlint"), "-no-color", *files], capture_output=True,
                          text=True, env=env, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert shutil.which("shellcheck", path=env["PATH"]), "shellcheck checks the run: scripts"


@pytest.mark.parametrize("persona", ["regular", "auditor"])
def test_zizmor_reports_nothing_at_medium_or_above(installed: list[Path], persona: str) -> None:
    files = [str(p) for p in (*SHIPPED, *OWN, *installed)]
    proc = subprocess.run([tool("zizmor"), "--offline", "--persona", persona,
                           "--min-severity", "medium", "--format", "plain", *files],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "No findings to report" in proc.stdout + proc.stderr


@pytest.mark.parametrize("path", [*SHIPPED, *OWN], ids=lambda p: p.name)
def test_every_zizmor_ignore_is_explained(path: Path) -> None:
    for line in path.read_text().splitlines():
        m = re.search(r"zizmor: ignore\[[a-z-]+\](.*)", line)
        if m:
            assert len(m.group(1).split()) >= 5, f"{path.name}: unexplained ignore: {line}"


@pytest.mark.parametrize("path", [*SHIPPED, *OWN], ids=lambda p: p.name)
def test_conventions(path: Path) -> None:
    text = path.read_text()
    doc = load(path)
    assert doc["permissions"] == {}, "permissions: {} at the top; grants per job"
    assert "pull_request_target" not in doc["on"]
    for name, job in doc["jobs"].items():
        assert isinstance(job.get("timeout-minutes"), int), f"{name}: timeout-minutes"
        assert "permissions" in job, f"{name}: job-level permissions"
        for step in job.get("steps", []):
            uses = step.get("uses")
            if uses:
                assert re.fullmatch(r"[\w.-]+/[\w.-]+@[0-9a-f]{40}", uses), uses
                assert re.search(re.escape(uses) + r" # v\d+\.\d+\.\d+", text), \
                    f"{uses}: pinned SHA with its version in a comment"
            if uses and uses.startswith("actions/checkout@"):
                assert step["with"]["persist-credentials"] is False
            assert "${{ github.event" not in str(step.get("run", "")), \
                "no expressions inside scripts (template injection): pass them through env"


# values that must parse
SAMPLES = {"state": "success", "PR": "7", "COMMENT_ID": "123", "ISSUE": "9"}


def _sample(m: re.Match[str]) -> str:
    return SAMPLES.get(m.group(1), "X")


def _invocations(doc: dict) -> list[list[str]]:
    calls = []
    for job in doc["jobs"].values():
        for step in job.get("steps", []):
            script = re.sub(r"\\\n\s*", " ", str(step.get("run", "")))
            script = script.replace('"$RUNNER_TEMP/venv/bin/pinbump" ', "pinbump ")
            script = script.replace(' "${allow[@]}"', "")
            for part in re.split(r"[\n;]|\$\(|&&|\|\|", script):
                part = part.strip().rstrip(")")
                if part.startswith("pinbump "):
                    cmd = re.sub(r">>.*$", "", part)
                    words = shlex.split(cmd)[1:]
                    calls.append([re.sub(r"\$\{?(\w+)\}?", _sample, w) for w in words])
    return calls


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: p.name)
def test_every_pinbump_call_uses_real_subcommands_and_flags(path: Path) -> None:
    calls = _invocations(load(path))
    assert calls, "the workflow runs pinbump"
    parser = build_parser()
    for argv in calls:
        try:
            parser.parse_args(argv)
        except SystemExit as exc:  # argparse rejects an unknown subcommand or flag
            pytest.fail(f"{path.name}: `pinbump {' '.join(argv)}` does not parse ({exc})")


def test_gate_inputs_match_what_pinbump_run_dispatches() -> None:
    gate = load(ROOT / "workflows" / "pinbump-gpu-gate.yml")
    declared = gate["on"]["workflow_dispatch"]["inputs"]
    assert tuple(declared) == (*GATE_INPUTS, *NIGHTLY_INPUTS)
    assert declared["channel"]["options"] == ["stable", "nightly"]
    assert Path(Policy().gate_workflow).name == "pinbump-gpu-gate.yml"
    for path in SHIPPED:
        used = set(re.findall(r"inputs\.(\w+)", path.read_text()))
        inputs = (load(path)["on"].get("workflow_dispatch") or {}).get("inputs") or {}
        assert used <= set(inputs), (path.name, used - set(inputs))


def test_gpu_jobs_never_run_fork_code() -> None:
    gate = load(ROOT / "workflows" / "pinbump-gpu-gate.yml")
    verify = gate["jobs"]["verify"]
    condition = " ".join(verify["if"].split())
    assert "github.event.pull_request.head.repo.full_name == github.repository" in condition
    assert "startsWith(github.event.pull_request.head.ref, 'pinbump/')" in condition
    assert "contains(github.event.pull_request.labels.*.name, 'gpu-gate')" in condition
    gpu = gate["jobs"]["gpu"]
    assert gpu["needs"] == "verify", "no GPU job starts before the PR and SHA are verified"
    assert "self-hosted" in gpu["strategy"]["matrix"]["include"][0]["labels"]
    calls = [" ".join(c) for c in _invocations({"jobs": {"verify": verify}})]
    assert any(c.startswith("verify-pr") and "--allow-label" not in c for c in calls), \
        "a dispatch is verified as a bot PR, with no label admitting anything else"
    dispatch = [s for s in verify["steps"] if "verify-pr" in str(s.get("run", ""))]
    assert {s["if"] for s in dispatch} == {
        "github.event_name == 'workflow_dispatch' && inputs.channel != 'nightly'",
        "github.event_name != 'workflow_dispatch'"}
    [nightly] = [s for s in verify["steps"] if "verify-nightly" in str(s.get("run", ""))]
    assert nightly["if"] == "github.event_name == 'workflow_dispatch' && inputs.channel == " \
                            "'nightly'"
    assert '--versions="$VERSIONS"' in nightly["run"]  # one argument, never an option
    assert gate["jobs"]["gate"]["if"] == "inputs.channel != 'nightly'"  # never a merge
    board = gate["jobs"]["nightly-dashboard"]
    assert board["permissions"] == {"contents": "read", "issues": "write", "statuses": "read"}
    assert "download-artifact" not in str(board["steps"])  # it reads no GPU job's output


def _gpu_jobs(doc: dict) -> dict[str, dict]:
    return {name: job for name, job in doc["jobs"].items()
            if "self-hosted" in str(job.get("strategy", "")) + str(job.get("runs-on", ""))}


@pytest.mark.parametrize("which", ["shipped", "installed"])
def test_gpu_jobs_hold_no_token_that_can_write_statuses(installed: list[Path], which: str
                                                       ) -> None:
    path = ROOT / "workflows" / "pinbump-gpu-gate.yml" if which == "shipped" else installed[2]
    doc = load(path)
    gpu = _gpu_jobs(doc)
    assert gpu, "the gate has GPU jobs"
    for name, job in gpu.items():
        assert set(job["permissions"].values()) == {"read"}, (name, job["permissions"])
        text = yaml.safe_dump(job)
        assert "secrets." not in text and "GITHUB_TOKEN" not in text, name
    writers = {n for n, j in doc["jobs"].items() if j["permissions"].get("statuses") == "write"}
    assert writers == {"report"}
    report = doc["jobs"]["report"]
    assert "self-hosted" not in str(report["runs-on"])
    checkouts = [s["with"] for s in report["steps"] if "checkout" in s.get("uses", "")]
    assert all("env.SHA" not in str(w.get("ref", "")) for w in checkouts), \
        "the status writer never checks out the PR"


_PY = re.compile(r"(?:^|[\s;(|&])(\S*python3?)\"?((?:\s+-\w+)*)")


@pytest.mark.parametrize("which", ["shipped", "installed"])
def test_no_tool_runs_from_the_pr_checkout(installed: list[Path], which: str) -> None:
    """No step of the gate runs with the PR checkout as working directory or first on
    sys.path: every script runs in runner.temp, Python with -I, pip only as `python -I -m
    pip`, no relative path; every checkout goes to a folder of its own."""
    path = ROOT / "workflows" / "pinbump-gpu-gate.yml" if which == "shipped" else installed[2]
    doc = load(path)
    for name, job in doc["jobs"].items():
        for step in job["steps"]:
            if "checkout" in step.get("uses", ""):
                assert step["with"].get("path"), f"{name}: checkout into the workspace root"
            script = step.get("run")
            if script is None:
                continue
            assert step.get("working-directory") == "${{ runner.temp }}", (name, step["name"])
            flat = re.sub(r"\\\n\s*", " ", script)
            assert not re.search(r"(^|\s)\.{1,2}/", flat), (name, "relative path", flat)
            bare = re.search(r"(^|[\s;(])pip3?\s", flat.replace("-I -m pip ", "-I -m PIP "))
            assert not bare, (name, "pip other than `python -I -m pip`", flat)
            for m in _PY.finditer(flat):
                assert "-I" in m.group(2).split(), (name, "python without -I", m.group(0))


def test_required_statuses_are_the_gpu_jobs() -> None:
    gate = load(ROOT / "workflows" / "pinbump-gpu-gate.yml")
    jobs = [row["job"] for row in gate["jobs"]["gpu"]["strategy"]["matrix"]["include"]]
    assert list(Policy().runner_labels) == jobs
    assert Policy().checks_required == tuple(f"pinbump/gpu-gate/{j}" for j in jobs)
    upload = [s for s in gate["jobs"]["gpu"]["steps"] if "upload-artifact" in s.get("uses", "")]
    assert upload[0]["with"]["name"] == "gpu-gate-${{ matrix.job }}"  # what report-gpu reads


@pytest.mark.parametrize("which", ["shipped", "installed"])
def test_pinbump_is_installed_from_a_tag_or_a_full_sha(installed: list[Path], which: str
                                                       ) -> None:
    paths = SHIPPED if which == "shipped" else installed
    for path in paths:
        ref = load(path)["env"]["PINBUMP_REF"]
        assert re.fullmatch(r"[0-9a-f]{40}|v\d+(\.\d+)+", ref), (path.name, ref)


def test_install_refuses_a_branch_as_pinbump_ref(tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["install-workflows", "--repo", str(tmp_path), "--runner-labels",
                 "h100=gpu", "--pinbump-ref", "main"]) == 2
    assert "--pinbump-ref 'main': give a release tag" in capsys.readouterr().err
    assert not (tmp_path / ".github").exists()


@pytest.mark.parametrize("link", [".github", ".github/workflows",
                                  ".github/workflows/pinbump-bump.yml"])
def test_install_never_writes_through_a_symlink(tmp_path: Path, link: str,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    repo, outside = tmp_path / "repo", tmp_path / "outside"
    repo.mkdir()
    outside.mkdir()
    (outside / "pinbump-bump.yml").write_text("theirs\n")
    target = repo / link
    target.parent.mkdir(parents=True, exist_ok=True)
    target.symlink_to(outside / "pinbump-bump.yml" if link.endswith(".yml") else outside)
    assert main(["install-workflows", "--repo", str(repo), "--runner-labels",
                 "h100=gpu"]) == 2
    err = capsys.readouterr().err
    assert "is a symbolic link" in err and err.count("\n") == 1
    assert sorted(p.name for p in outside.iterdir()) == ["pinbump-bump.yml"]
    assert (outside / "pinbump-bump.yml").read_text() == "theirs\n"


def test_install_writes_settings_and_is_idempotent(installed: list[Path],
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    gate = load(installed[2])
    rows = gate["jobs"]["gpu"]["strategy"]["matrix"]["include"]
    assert rows == [{"job": "h100", "labels": ["self-hosted", "linux", "gpu", "h100"]},
                    {"job": "b200x8", "labels": ["self-hosted", "linux", "gpu", "b200",
                                                 "multi-gpu"]}]
    assert gate["env"]["PYTHON_VERSION"] == "3.11"
    assert gate["env"]["PYPROJECT"] == "python/pyproject.toml"
    assert gate["env"]["PINBUMP_REF"] == "v0.1.0"
    repo = installed[0].parents[2]
    before = [p.stat().st_mtime_ns for p in installed]
    assert main(["install-workflows", "--repo", str(repo), "--runner-labels",
                 "h100=self-hosted,linux,gpu,h100", "--runner-labels",
                 "b200x8=self-hosted,linux,gpu,b200,multi-gpu", "--python", "3.11",
                 "--pyproject", "python/pyproject.toml", "--pinbump-ref", "v0.1.0"]) == 0
    assert [p.stat().st_mtime_ns for p in installed] == before
    err = capsys.readouterr().err
    assert "unchanged .github/workflows/pinbump-gpu-gate.yml" in err
    assert "add these jobs to [tool.pinbump.runner-labels]" in err


def test_bad_runner_labels_are_rejected(tmp_path: Path, capsys: pytest.CaptureFixture[str]
                                        ) -> None:
    assert main(["install-workflows", "--repo", str(tmp_path), "--runner-labels",
                 "H100=gpu"]) == 2
    assert "expected JOB=LABEL" in capsys.readouterr().err
    assert not (tmp_path / ".github").exists()


def test_project_ci_runs_the_ci_script() -> None:
    ci = load(ROOT / ".github" / "workflows" / "ci.yml")
    steps = ci["jobs"]["test"]["steps"]
    assert steps[-1]["run"] == "bash .ci/run"
    versions = ci["jobs"]["test"]["strategy"]["matrix"]["python"]
    assert versions[0] == "3.10"  # requires-python >= 3.10


def test_install_workflows_speaks_json(tmp_path: Path,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    import json

    argv = ["install-workflows", "--repo", str(tmp_path), "--runner-labels",
            "h100=self-hosted,gpu", "--json"]
    assert main(argv) == 0
    out = json.loads(capsys.readouterr().out)
    assert out == {"dry_run": False, "runner_labels": {"h100": ["self-hosted", "gpu"]},
                   "files": [{"path": f".github/workflows/{p.name}", "changed": True}
                             for p in SHIPPED]}
    assert main(argv) == 0
    assert not any(f["changed"] for f in json.loads(capsys.readouterr().out)["files"])


def test_every_command_has_json() -> None:
    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    lacking = [name for name, p in sub.choices.items()
               if not any("--json" in a.option_strings for a in p._actions)]
    assert lacking == []  # gpu-gate prints its gate.json


def test_commands_workflow_runs_pinbump_command_on_comments_and_dashboard_edits() -> None:
    doc = load(ROOT / "workflows" / "pinbump-commands.yml")
    assert set(doc["on"]) == {"issue_comment", "issues"}
    job = doc["jobs"]["command"]
    condition = " ".join(job["if"].split())
    assert "startsWith(github.event.comment.body, '/pinbump ')" in condition
    assert "contains(github.event.issue.body, '- [x] <!-- pinbump:do ')" in condition
    assert "contains(github.event.issue.labels.*.name, 'pinbump')" in condition  # an
    # outsider's unlabelled look-alike never starts a job (nor cancels a pending one)
    assert doc["on"]["issues"]["types"] == ["edited"]  # a ticked dashboard box
    calls = [" ".join(c) for c in _invocations(doc)]
    assert any("--comment-id" in c for c in calls) and any("--dashboard" in c for c in calls)
    checkouts = [s for s in job["steps"] if "checkout" in s.get("uses", "")]
    assert all("ref" not in s["with"] for s in checkouts[:1]), "the default branch, not a PR"
    bump_group = load(ROOT / "workflows" / "pinbump-bump.yml")["concurrency"]["group"]
    assert "concurrency" not in doc  # a run whose job is skipped joins no group
    group = " ".join(job["concurrency"]["group"].split())
    # writers and the dashboard share the bump's group; anyone else's command runs alone
    # (keyed by its comment), so outsiders' comments can never cancel a pending bump
    assert f"&& '{bump_group}'" in group
    assert "github.event_name == 'issues'" in group
    assert "contains(fromJSON('[\"OWNER\", \"MEMBER\", \"COLLABORATOR\"]'), " \
           "github.event.comment.author_association)" in group
    assert "|| format('pinbump-command-{0}', github.event.comment.id)" in group
    assert job["concurrency"]["cancel-in-progress"] is False
