"""The command line, ``pinbump`` and ``python -m bot``: parsing and thin handlers that
import what they need when they run (no work at import time)."""

from __future__ import annotations

import argparse
import math
import os
import re
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bot import __version__
from bot.errors import InputError, PinbumpError

if TYPE_CHECKING:
    from bot.commands.context import PlanOptions
    from bot.commands.pr import GitHubOptions
    from bot.core.workspace import Workspace


def _as_of(value: str) -> str:
    try:
        datetime.strptime(value, "%Y-%m-%d")
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is not a date YYYY-MM-DD") from None
    return value


def _days(value: str) -> float:
    try:
        days = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is not a number of days") from None
    if days < 0:
        raise argparse.ArgumentTypeError("must not be negative")
    return days


def _seconds(value: str) -> float:
    try:
        seconds = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is not a number of seconds") from None
    if not math.isfinite(seconds) or seconds <= 0:
        raise argparse.ArgumentTypeError(f"{value!r}: must be a positive number of seconds")
    return seconds


def _cuda_variant(value: str) -> str:
    if value != "auto" and not re.fullmatch(r"cu\d{3}", value):
        raise argparse.ArgumentTypeError(f"{value!r} is not a CUDA variant such as cu130")
    return value


def _retries(value: str) -> int:
    try:
        retries = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is not a whole number") from None
    if not 0 <= retries <= 20:
        raise argparse.ArgumentTypeError(f"{value!r}: must be between 0 and 20")
    return retries


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="pinbump",
        description="Bump tightly coupled GPU-kernel packages (FlashInfer and companions) "
                    "to the newest complete and consistent set.")
    parser.add_argument("--version", action="version", version=f"pinbump {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    _plan_commands(sub)
    _github_commands(sub)
    _tool_commands(sub)
    return parser


def _plan_commands(sub: Any) -> None:
    """plan, apply, drift: the target and the index, no GitHub."""
    plan = sub.add_parser("plan", help="choose the newest complete and consistent set")
    add_plan_options(plan)
    plan.set_defaults(handler=cmd_plan)

    apply = sub.add_parser("apply", help="edit every place a pin lives, all or nothing")
    add_plan_options(apply)
    apply.add_argument("--dry-run", action="store_true",
                       help="print the unified diff and write nothing")
    apply.add_argument("--no-fix", dest="fix", action="store_false",
                       help="leave calls alone (default: rewrite positional calls the new "
                            "version would bind differently into keyword form)")
    apply.set_defaults(handler=cmd_apply)

    drift = sub.add_parser("drift", help="API changes of the lead package at the target's "
                                          "call sites (exit 1 when one is breaking)")
    add_plan_options(drift)
    drift.add_argument("--from", dest="from_version", metavar="VERSION",
                       help="old version (default: the pin on origin/<base>, else HEAD)")
    drift.add_argument("--base", default="main",
                       help="base branch whose pin --from defaults to (default: main)")
    drift.add_argument("--to", dest="to_version", metavar="VERSION",
                       help="new version (default: the plan's target)")
    drift.add_argument("--fix", action="store_true",
                       help="rewrite breaking positional calls into keyword form")
    drift.add_argument("--markdown", action="store_true", help="print the PR-body section")
    drift.add_argument("--gate-report", type=Path, metavar="FILE",
                       help="gate.json of a GPU gate run: behaviour it saw change becomes "
                            "review findings on the calls of that function")
    drift.add_argument("--sarif", type=Path, metavar="FILE",
                       help="also write the findings as SARIF 2.1.0 (for code scanning)")
    drift.set_defaults(handler=cmd_drift)


def add_push_options(p: Any) -> None:
    """The branch the bot PR targets and the remote it is pushed to (run, command)."""
    p.add_argument("--base", default="main", help="base branch (default: main)")
    p.add_argument("--remote", default="origin", help="git remote to push to")


def _github_commands(sub: Any) -> None:
    """run, gate: the bot PR on GitHub."""
    run = sub.add_parser("run", help="plan, apply and drift, then open or update the bot PR, "
                                      "dispatch the GPU gate and keep the dashboard")
    add_plan_options(run)
    add_github_options(run)
    add_push_options(run)
    run.add_argument("--dry-run", action="store_true",
                     help="compute the branch and PR body; push and call GitHub for nothing")
    run.add_argument("--print-body", action="store_true", help="print the PR body")
    run.add_argument("--gate-report", type=Path, metavar="FILE",
                     help="gate.json of the last GPU gate run: behaviour it saw change becomes "
                          "review findings in the PR body")
    run.add_argument("--recreate", action="store_true",
                     help="start the bot branch over even if it has hand edits")
    run.add_argument("--rebase", action="store_true",
                     help="rebase the bot branch on the base now, hand edits kept")
    run.set_defaults(handler=cmd_run)

    pr_gate = sub.add_parser("gate", help="merge the bot PR when every required check passed "
                                          "on its head commit")
    add_github_options(pr_gate)
    pr_gate.add_argument("--pr", type=int, required=True, help="pull request number")
    pr_gate.add_argument("--repo", type=Path, default=Path("."),
                         help="a git checkout of the target; the policy is read from its "
                              "remote's base branch, never from what is checked out "
                              "(default: .)")
    pr_gate.add_argument("--reports", type=Path, metavar="DIR",
                         help="downloaded gpu-gate-<job> artifacts; their summaries go into "
                              "the failure comment")
    command = sub.add_parser("command", help="run a maintainer's /pinbump command: a PR "
                                              "comment, or the boxes ticked on the dashboard")
    add_plan_options(command)
    add_github_options(command)
    add_push_options(command)
    which = command.add_mutually_exclusive_group(required=True)
    which.add_argument("--comment-id", type=int, help="the issue comment holding the command")
    which.add_argument("--dashboard", action="store_true",
                       help="run the commands ticked on the dashboard issue")
    command.add_argument("--sender", help="with --dashboard: who ticked the boxes")
    command.add_argument("--issue", type=int, help="with --dashboard: the issue whose edit "
                                                   "this is (nothing runs unless it is the "
                                                   "dashboard)")
    command.set_defaults(handler=cmd_command)

    pr_gate.add_argument("--json", action="store_true",
                         help="print the gate's state and checks as JSON")
    pr_gate.set_defaults(handler=cmd_gate)

    for name, text in (("verify-pr", "refuse a PR and SHA the GPU gate must not test"),
                       ("report-gpu", "set the GPU jobs' commit statuses from their "
                                      "gate.json artifacts")):
        cmd = sub.add_parser(name, help=text)
        add_github_options(cmd)
        cmd.add_argument("--pr", type=int, required=name == "verify-pr",
                         help="pull request number (not with --channel nightly)")
        cmd.add_argument("--sha", required=True, help="the commit the GPU jobs test")
        cmd.add_argument("--repo", type=Path, default=Path("."),
                         help="a git checkout of the target (the policy is read from the "
                              "remote's base branch)")
        cmd.add_argument("--allow-label", metavar="LABEL",
                         help="also admit a same-repository PR carrying this label "
                              "(pull-request events; never merged)")
        if name == "report-gpu":
            cmd.add_argument("--reports", type=Path, required=True, metavar="DIR",
                             help="the downloaded gpu-gate-<job> artifacts")
            cmd.add_argument("--target-url", default="", help="link of each status")
            _nightly_args(cmd, channel=True)
        cmd.add_argument("--json", action="store_true", help="print the result as JSON")
        cmd.set_defaults(handler=cmd_gpu_report)

    verify = sub.add_parser("verify-nightly", help="refuse a nightly GPU gate dispatch that is "
                                                   "not the default branch's head and the "
                                                   "runner's own nightly plan")
    add_plan_options(verify)
    add_github_options(verify)
    _nightly_args(verify)
    verify.set_defaults(handler=cmd_verify_nightly)
    board = sub.add_parser("nightly-dashboard", help="show the nightly gate's statuses on the "
                                                     "dashboard issue")
    add_github_options(board)
    board.add_argument("--repo", type=Path, default=Path("."),
                       help="a git checkout of the target (its origin is the remote)")
    _nightly_args(board)
    board.add_argument("--json", action="store_true", help="print the dashboard's number")
    board.set_defaults(handler=cmd_nightly_dashboard)


def _nightly_args(cmd: argparse.ArgumentParser, *, channel: bool = False) -> None:
    """The nightly gate's arguments: the base commit, the versions the dispatch names."""
    if channel:
        cmd.add_argument("--channel", choices=("stable", "nightly"), default="stable",
                         help="nightly: statuses pinbump/nightly-gate/<job> on a commit of "
                              "the default branch (no PR)")
    else:
        cmd.add_argument("--sha", required=True, help="the default branch's head commit")
    cmd.add_argument("--versions", default="", metavar="TEXT",
                     help="the nightly set: NAME==VERSION pairs separated by spaces")
    cmd.add_argument("--base", default="main", help="the default branch (default: main)")


def _tool_commands(sub: Any) -> None:
    """pins, status, install-workflows, gpu-gate: what the workflows call."""
    pins = sub.add_parser("pins", help="print where the group is pinned, or one package's "
                                        "pinned version")
    pins.add_argument("--repo", type=Path, default=Path("."))
    pins.add_argument("--group", help="group (default: the config's)")
    pins.add_argument("--package", help="print only this package's pinned version")
    pins.add_argument("--file", default="", metavar="PATH",
                      help="only pins in this file, relative to --repo (empty: all files)")
    pins.add_argument("--json", action="store_true")
    pins.set_defaults(handler=cmd_pins)

    status = sub.add_parser("status", help="set a commit status (used by the GPU jobs)")
    add_github_options(status)
    status.add_argument("--sha", required=True)
    status.add_argument("--context", required=True)
    status.add_argument("--state", required=True,
                        choices=["pending", "success", "failure", "error"])
    status.add_argument("--target-url", default="")
    status.add_argument("--description", default="")
    status.add_argument("--json", action="store_true", help="print the status set as JSON")
    status.set_defaults(handler=cmd_status)

    install = sub.add_parser("install-workflows", help="write the bump and GPU-gate "
                                                       "workflows into a target repository")
    install.add_argument("--repo", type=Path, default=Path("."))
    install.add_argument("--runner-labels", action="append", default=[], metavar="JOB=L1,L2",
                         help="a GPU job and its runner labels (repeatable; default: the "
                              "config's runner-labels)")
    install.add_argument("--python", help="Python version the workflows set up")
    install.add_argument("--pyproject", help="the pyproject whose pins the GPU gate installs")
    install.add_argument("--pinbump-repository", help="OWNER/NAME of pinbump's source")
    install.add_argument("--pinbump-ref", help="ref of pinbump's source (a tag or SHA)")
    install.add_argument("--dry-run", action="store_true", help="print, write nothing")
    install.add_argument("--json", action="store_true",
                         help="print the files written and the runner jobs as JSON")
    install.set_defaults(handler=cmd_install_workflows)

    gate = sub.add_parser("gpu-gate", help="run gpu_tests/ against two FlashInfer installs "
                                            "and time them old-vs-new on this GPU")
    gate.add_argument("--baseline", type=Path, metavar="SITE_DIR",
                      help="site directory holding the current version")
    gate.add_argument("--candidate", type=Path, metavar="SITE_DIR",
                      help="site directory holding the proposed version")
    gate.add_argument("--install", type=Path, metavar="FILE",
                      help='install both sides first: JSON {"baseline": [...], "candidate": '
                           '[...]}, each a list of {"package", "version", "index_urls"}')
    gate.add_argument("--deploy-base", type=Path, metavar="DIR",
                      help="install what this checkout of the base branch deploys (its pins "
                           "of the lead and lockstep packages, from the plan's indexes)")
    gate.add_argument("--deploy-head", type=Path, metavar="DIR",
                      help="... and what this checkout of the PR head deploys (indexes and "
                           "policy still from --deploy-base)")
    gate.add_argument("--nightly-versions", metavar="TEXT",
                      help="with --deploy-base, instead of --deploy-head: the candidate is the "
                           "base's deployed set at these nightly versions (NAME==VERSION pairs "
                           "separated by spaces), from the nightly indexes")
    gate.add_argument("--cuda-variant", type=_cuda_variant, metavar="cuXYZ",
                      help="the runner's CUDA variant for per-variant indexes (cu129, cu130; "
                           "auto: torch's CUDA version on this runner)")
    gate.add_argument("--out", type=Path, required=True, metavar="DIR",
                      help="where gate.json, summary.md, JUnit files and logs go")
    gate.add_argument("--tests", type=Path, help="the gpu_tests folder (default: the one "
                      "beside this package, or $PINBUMP_GPU_TESTS)")
    gate.add_argument("--extra-path", type=Path, action="append", default=[],
                      metavar="DIR", help="more site directories shared by both installs")
    gate.add_argument("--rounds", type=int, default=8, help="interleaved timing rounds")
    gate.add_argument("--samples-per-round", type=int, default=5)
    gate.add_argument("--threshold", type=float, default=0.05,
                      help="flag a regression beyond this fraction slower (default 0.05)")
    gate.add_argument("--no-perf", action="store_true", help="skip the old-vs-new timing")
    gate.add_argument("--no-tests", action="store_true", help="only the timing (A/A checks)")
    gate.add_argument("--min-tests", type=int, metavar="N",
                      help="kernel tests the candidate must execute, not skip (default: the "
                           "job's gate-min-tests in the base config, else 1)")
    gate.add_argument("--job", metavar="NAME",
                      help="the GPU job this runs as: its gate-min-tests is read from the "
                           "config of --deploy-base (or --policy-repo)")
    gate.add_argument("--policy-repo", type=Path, metavar="DIR",
                      help="the base branch checkout whose config applies (default: "
                           "--deploy-base)")
    gate.add_argument("--fused-world", type=int, metavar="N",
                      help="GPUs for the fused allreduce timing (default: all the runner "
                           "has, when 2 or more; 0: none)")
    gate.add_argument("--workspace", type=Path, metavar="DIR",
                      help="keep FlashInfer's JIT caches here, one folder per install")
    gate.add_argument("--pytest-arg", action="append", default=[], metavar="ARG",
                      help="extra argument for pytest (repeatable; default selection -m gpu)")
    gate.add_argument("--json", action="store_true",
                      help="print gate.json instead of the summary")
    gate.set_defaults(handler=cmd_gpu_gate)

    bis = sub.add_parser("bisect", help="find the first bad version of the lead between the "
                                         "pin and a target the GPU gate failed")
    add_plan_options(bis)
    bis.add_argument("--gate-result", type=Path, metavar="GATE_JSON",
                     help="the failing gate.json: its candidate is the bad end, its failing "
                          "tests the ones run per step")
    bis.add_argument("--test", action="append", default=[], metavar="ID",
                     help="a failing test (module::test[param]); repeatable; with --bad")
    bis.add_argument("--bad", help="the failing version (default: the gate result's candidate)")
    bis.add_argument("--good", help="a version known to pass (default: the target's pin)")
    bis.add_argument("--out", type=Path, required=True, metavar="DIR",
                     help="installs, per-step JUnit and logs, bisect.json")
    bis.add_argument("--tests", type=Path, help="the gpu_tests folder (default: the one beside "
                     "this package, or $PINBUMP_GPU_TESTS)")
    bis.add_argument("--cuda-variant", type=_cuda_variant, metavar="cuXYZ")
    bis.add_argument("--extra-path", type=Path, action="append", default=[], metavar="DIR")
    bis.add_argument("--workspace", type=Path, metavar="DIR")
    bis.add_argument("--nightlies", action="store_true",
                     help="bisect nightly builds too (also when the channel is nightly)")
    bis.add_argument("--step-retries", type=int, default=2,
                     help="re-runs of a step that gave no answer (default 2)")
    bis.add_argument("--confirm", type=int, default=1,
                     help="re-runs of the last good version before the verdict (default 1)")
    bis.add_argument("--comment-pr", type=int, metavar="N",
                     help="post the verdict and the [known-bad] entry on this (bot) PR")
    bis.add_argument("--github-repo", metavar="OWNER/NAME")
    bis.add_argument("--token-env", default="GITHUB_TOKEN", metavar="NAME")
    bis.add_argument("--api-url", default="https://api.github.com")
    bis.add_argument("--write-interval", type=float, default=1.0, metavar="SECONDS")
    bis.add_argument("--budget", type=_seconds, metavar="SECONDS")
    bis.set_defaults(handler=cmd_bisect)


def add_plan_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--repo", type=Path, default=Path("."), help="target repository (default: .)")
    p.add_argument("--group", help="group to plan (default: flashinfer or the config's group)")
    p.add_argument("--as-of", type=_as_of, metavar="YYYY-MM-DD",
                   help="replay the index as it stood at the end of this day (UTC)")
    p.add_argument("--index-url", help="simple index URL (default: https://pypi.org/simple)")
    p.add_argument("--min-release-age", type=_days, metavar="DAYS",
                   help="skip releases younger than this (default: 3)")
    p.add_argument("--json", action="store_true", help="print the plan as JSON")
    p.add_argument("--cache-dir", type=Path, help="HTTP and metadata cache "
                   "(default: $PINBUMP_CACHE_DIR or ~/.cache/pinbump)")
    p.add_argument("--no-cache", action="store_true", help="use no on-disk cache")
    p.add_argument("--refresh", action="store_true",
                   help="ask the index again for every page, even one its Cache-Control "
                        "says is still fresh")
    p.add_argument("--timeout", type=_seconds, default=20.0,
                   help="deadline of each request in seconds, reading included (default 20)")
    p.add_argument("--retries", type=_retries, default=3,
                   help="retries per request, 0-20 (default 3)")
    p.add_argument("--deadline", type=_seconds, default=900.0,
                   help="seconds for all of the command's index traffic, retries included "
                        "(default 900)")
    p.add_argument("--channel", choices=("stable", "nightly"),
                   help="plan against FlashInfer's nightly index (early-warning GPU runs; "
                        "run opens no PR unless nightly-prs = true)")
    p.add_argument("--strict", action="store_true", default=None,
                   help="an index that cannot be read is an error (exit 2), not a report")


def add_github_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--github-repo", required=True, metavar="OWNER/NAME")
    p.add_argument("--token-env", default="GITHUB_TOKEN", metavar="NAME",
                   help="environment variable holding the token (default: GITHUB_TOKEN)")
    p.add_argument("--api-url", default="https://api.github.com",
                   help="GitHub REST API URL (GitHub Enterprise: https://HOST/api/v3)")
    p.add_argument("--write-interval", type=float, default=1.0, metavar="SECONDS",
                   help="pause between GitHub writes (default 1, as GitHub asks)")
    p.add_argument("--app-id", metavar="ID",
                   help="authenticate as this GitHub App (installation token) instead of a "
                        "token; its private key (PEM) is read from --app-key-env")
    p.add_argument("--app-key-env", default="PINBUMP_APP_KEY", metavar="NAME",
                   help="environment variable holding the App's private key "
                        "(default: PINBUMP_APP_KEY)")
    p.add_argument("--budget", type=_seconds, metavar="SECONDS",
                   help="time this command may take (the job's budget): a rate-limit wait "
                        "beyond it is an error, not a sleep (default: waits up to 15 min)")


def _github_options(args: argparse.Namespace) -> GitHubOptions:
    from bot.commands.pr import GitHubOptions

    if not re.fullmatch(r"[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+", args.github_repo):
        raise InputError(f"--github-repo {args.github_repo!r}: expected OWNER/NAME")
    return GitHubOptions(repo=args.github_repo, token_env=args.token_env, api_url=args.api_url,
                         write_interval=args.write_interval,
                         budget=getattr(args, "budget", None),
                         app_id=getattr(args, "app_id", None),
                         app_key_env=getattr(args, "app_key_env", "PINBUMP_APP_KEY"))


def cmd_run(args: argparse.Namespace) -> int:
    from bot.commands.drift import read_gate_report
    from bot.commands.pr import run_bot

    result = run_bot(plan_options(args), _github_options(args), args.base,
                     dry_run=args.dry_run, remote=args.remote, out=sys.stderr,
                     gate_report=read_gate_report(args.gate_report),
                     recreate=args.recreate, rebase=args.rebase)
    if args.print_body or args.dry_run:
        sys.stdout.write(result.body)
    if args.json:
        from bot.render.jsonout import to_json

        sys.stdout.write(to_json({
            "action": result.action, "branch": result.branch, "pr": result.pr,
            "head_sha": result.head_sha, "pushed": result.pushed,
            "superseded": result.superseded, "dispatched": result.dispatched,
            "dashboard": result.dashboard}, one_line=True))
    return 0


def _print_json(data: object) -> None:
    from bot.render.jsonout import to_json

    sys.stdout.write(to_json(data, sort_keys=True))


def cmd_gate(args: argparse.Namespace) -> int:
    from bot.commands.pr import run_pr_gate

    result = run_pr_gate(_github_options(args), args.pr, args.repo, out=sys.stderr,
                         reports=args.reports)
    if args.json:
        _print_json(result.as_dict(args.pr))
    return result.exit_code


def cmd_command(args: argparse.Namespace) -> int:
    from bot.commands.chatops import Context, run_comment, run_dashboard

    ctx = Context(plan_options(args), _github_options(args), args.base, args.remote,
                  sys.stderr)
    if args.dashboard:
        if not args.sender:
            raise InputError("--dashboard needs --sender LOGIN (who ticked the boxes)")
        results = run_dashboard(ctx, args.sender, args.issue)
    else:
        results = [run_comment(ctx, args.comment_id)]
    if args.json:
        _print_json([r.as_dict() for r in results])
    return 0


def cmd_gpu_report(args: argparse.Namespace) -> int:
    from bot.commands.gpu_report import GateTarget, run_report, run_verify

    if not re.fullmatch(r"[0-9a-f]{40}", args.sha):
        raise InputError(f"--sha {args.sha[:60]!r}: expected a full 40-hex commit SHA")
    if getattr(args, "channel", "stable") == "nightly":
        return _report_nightly(args)
    if args.pr is None:
        raise InputError(f"{args.command}: --pr is required (or --channel nightly)")
    target = GateTarget(args.pr, args.sha, args.allow_label)
    if args.command == "verify-pr":
        code = run_verify(_github_options(args), target, args.repo, out=sys.stderr)
        if args.json:
            _print_json({"pr": args.pr, "sha": args.sha, "verified": code == 0})
        return code
    results = run_report(_github_options(args), target, args.repo, args.reports,
                         target_url=args.target_url, out=sys.stderr)
    if args.json:
        _print_json({"pr": args.pr, "sha": args.sha, "statuses": [
            {"job": r.job, "state": r.state, "description": r.description} for r in results]})
    return 0


def _full_sha(sha: str) -> str:
    if not re.fullmatch(r"[0-9a-f]{40}", sha):
        raise InputError(f"--sha {sha[:60]!r}: expected a full 40-hex commit SHA")
    return sha


def _report_nightly(args: argparse.Namespace) -> int:
    from bot.commands.nightly import run_report_nightly

    if args.pr is not None or args.allow_label:
        raise InputError("report-gpu --channel nightly: no --pr or --allow-label (the nightly "
                         "gate tests the default branch, never a PR)")
    results = run_report_nightly(_github_options(args), args.repo, _full_sha(args.sha),
                                 args.versions, args.base, args.reports,
                                 target_url=args.target_url, out=sys.stderr)
    if args.json:
        _print_json({"sha": args.sha, "channel": "nightly", "statuses": [
            {"job": r.job, "state": r.state, "description": r.description} for r in results]})
    return 0


def cmd_verify_nightly(args: argparse.Namespace) -> int:
    from bot.commands.nightly import run_verify_nightly

    result = run_verify_nightly(plan_options(args), _github_options(args),
                                _full_sha(args.sha), args.versions, args.base, out=sys.stderr)
    if args.json:
        _print_json({**result, "verified": True})
    return 0


def cmd_nightly_dashboard(args: argparse.Namespace) -> int:
    from bot.commands.nightly import run_nightly_dashboard

    number = run_nightly_dashboard(_github_options(args), args.repo, _full_sha(args.sha),
                                   args.versions, args.base, out=sys.stderr)
    if args.json:
        _print_json({"dashboard": number, "sha": args.sha})
    return 0


def cmd_pins(args: argparse.Namespace) -> int:
    from bot.commands.context import load_workspace
    from bot.render.jsonout import to_json

    ws = load_workspace(args.repo, {"group": args.group})
    group = ws.group
    pins = [p for p in ws.target.pins
            if not args.file or p.file == Path(args.file).as_posix()]
    if args.package:
        from packaging.utils import canonicalize_name

        name = canonicalize_name(args.package)
        versions = sorted({str(p.current) for p in pins if p.package == name and p.current})
        if len(versions) != 1:
            found = ", ".join(versions) or "no pinned version"
            raise InputError(f"{name}: expected one pinned version under {args.repo}, found "
                             f"{found}")
        print(versions[0])
        return 0
    rows = [{"package": p.package, "requirement": p.requirement, "file": p.file,
             "line": p.line, "section": p.section}
            for name in group.members for p in pins if p.package == name]
    if args.json:
        sys.stdout.write(to_json({"group": group.name, "pins": rows}))
    else:
        for r in rows:
            print(f"{r['file']}:{r['line']}: {r['requirement']}  [{r['section']}]")
    return 0


def cmd_status(args: argparse.Namespace) -> int:
    from bot.core.models import StatusState

    gh_opts = _github_options(args)
    client = gh_opts.client(gh_opts.token() or "")
    client.set_status(args.sha, args.context, StatusState(args.state), args.target_url,
                      args.description)
    print(f"pinbump: {args.context} = {args.state} on {args.sha[:12]}", file=sys.stderr)
    if args.json:
        _print_json({"sha": args.sha, "context": args.context, "state": args.state,
                     "target_url": args.target_url, "description": args.description})
    return 0


def cmd_install_workflows(args: argparse.Namespace) -> int:
    from bot.commands.context import load_workspace
    from bot.commands.install_workflows import WorkflowSettings, install, parse_runner_labels

    policy = load_workspace(args.repo).policy
    runners = parse_runner_labels(args.runner_labels) if args.runner_labels else \
        dict(policy.runner_labels)
    settings = WorkflowSettings(runners=runners, python=args.python,
                                pyproject=args.pyproject, lead=policy.active_group.lead,
                                repository=args.pinbump_repository, ref=args.pinbump_ref)
    files = list(install(args.repo, settings, dry_run=args.dry_run))
    for path, changed in files:
        verb = "would write" if args.dry_run else "wrote"
        print(f"pinbump: {verb if changed else 'unchanged'} {path}", file=sys.stderr)
    if args.json:
        _print_json({"dry_run": args.dry_run,
                     "files": [{"path": p, "changed": c} for p, c in files],
                     "runner_labels": {j: list(v) for j, v in runners.items()}})
    if dict(runners) != dict(policy.runner_labels):
        jobs = ", ".join(f'{j} = {list(v)}' for j, v in runners.items())
        print("pinbump: note: `pinbump gate` requires one status per GPU job; add these jobs "
              f"to [tool.pinbump.runner-labels] too: {jobs}", file=sys.stderr)
    return 0


@contextmanager
def progress(message: str) -> Iterator[Callable[[str], None]]:
    """A spinner on stderr while something slow runs, only when stderr is a terminal: a pipe
    or a file gets nothing but the result. Yields ``say(text)``, which shows how far it got
    beside the message ("parsed 126/1,882 files")."""
    if not sys.stderr.isatty():
        yield lambda _text: None
        return
    from rich.console import Console
    from rich.markup import escape

    with Console(stderr=True).status(escape(message)) as status:
        yield lambda text: status.update(escape(f"{message}: {text}"))


def plan_options(args: argparse.Namespace) -> PlanOptions:
    from bot.commands.context import PlanOptions

    return PlanOptions(repo=args.repo, group=args.group, as_of=args.as_of,
                       index_url=args.index_url, min_release_age=args.min_release_age,
                       cache_dir=args.cache_dir, no_cache=args.no_cache, timeout=args.timeout,
                       retries=args.retries, deadline=args.deadline,
                       channel=args.channel, strict=args.strict, refresh=args.refresh)


def _read_target(opts: PlanOptions) -> Workspace:
    """The target, read once (a spinner on a terminal: a large tree takes seconds)."""
    from bot.commands.context import load_workspace

    with progress(f"reading {opts.repo}") as say:
        return load_workspace(opts.repo, opts.overrides,
                              counted=lambda n: say(f"read {n:,} files"))


def cmd_plan(args: argparse.Namespace) -> int:
    from bot.commands.context import open_services
    from bot.commands.plan import plan
    from bot.render.report import plan_json, plan_text

    opts = plan_options(args)
    with open_services(opts, progress=None if args.json else progress) as services:
        ws = _read_target(opts)  # while the index client gets ready (its CA bundle loads)
        result = plan(ws, services, opts.as_of)
    sys.stdout.write(plan_json(result) if args.json else plan_text(result))
    return 0


def cmd_apply(args: argparse.Namespace) -> int:
    from bot.adapters.writer import TargetState, peek_state, target_lock
    from bot.commands.apply import apply
    from bot.commands.context import open_services
    from bot.commands.plan import plan
    from bot.core.editset import edits_text, unified_diff
    from bot.render.report import edits_json

    opts = plan_options(args)
    if not opts.repo.is_dir():
        raise InputError(f"{opts.repo}: not a directory (pass the target repository with "
                         "--repo)")
    # One apply at a time per target, from reading the tree to the last write. A dry run
    # writes nothing, so it takes no lock (a read-only checkout can be previewed); it still
    # shows what finishing an interrupted apply would do.
    lock: AbstractContextManager[TargetState | None] = nullcontext(
        peek_state(opts.repo)) if args.dry_run else target_lock(
        opts.repo, waiting=lambda line: print(f"pinbump: {line}", file=sys.stderr))
    with lock as state:
        ws = _read_target(opts)
        with open_services(opts, progress=None if args.json else progress) as services:
            result = plan(ws, services, opts.as_of)
            applied = apply(ws, result, write=not args.dry_run,
                            services=services if args.fix else None, state=state)
    if args.json:
        sys.stdout.write(edits_json(applied.edits, applied.notes, written=applied.written))
    elif args.dry_run:
        sys.stdout.write(unified_diff(applied.edits))
        sys.stderr.write(edits_text(applied.edits, applied.notes, written=False,
                                    bumps=applied.bumps))
    else:
        sys.stdout.write(edits_text(applied.edits, applied.notes, written=applied.written,
                                    bumps=applied.bumps))
    return 0


def cmd_drift(args: argparse.Namespace) -> int:
    from bot.commands.context import open_services
    from bot.commands.drift import drift, publish_drift, read_gate_report
    from bot.render.drift import drift_json, drift_markdown, drift_text

    opts = plan_options(args)
    ws = _read_target(opts)
    gate_report = read_gate_report(args.gate_report)
    with open_services(opts, progress=progress) as services:
        outcome = drift(ws, services, args.from_version, args.to_version, fix=args.fix,
                        as_of=opts.as_of, base=args.base, gate_report=gate_report)
    report = outcome.report
    for line in publish_drift(report, ws.root, args.sarif, os.environ, __version__):
        print(line)  # GitHub Actions workflow commands go to stdout
    if args.json:
        sys.stdout.write(drift_json(report))
    elif args.markdown:
        sys.stdout.write(drift_markdown(report))
    else:
        sys.stdout.write(drift_text(report))
    for f in outcome.fixed:
        print(f"pinbump: fixed {f.file}:{f.line} {f.function}: positional arguments now "
              f"passed by keyword ({', '.join(k for _, k in f.fix)})", file=sys.stderr)
    for f in outcome.unfixed:
        print(f"pinbump: not fixed {f.file}:{f.line} {f.function}: {f.detail}", file=sys.stderr)
    return 1 if report.breaking else 0


def _absolute(path: Path | None) -> Path | None:
    return path.resolve() if path is not None else None


def cmd_gpu_gate(args: argparse.Namespace) -> int:
    from bot.commands.gpu_gate import (
        GateOptions,
        default_tests_dir,
        deploy_lists,
        gate_json,
        read_install_file,
        run_gate,
    )
    from bot.core.gate_report import gate_markdown

    ways = [bool(args.baseline or args.candidate), bool(args.install),
            bool(args.deploy_base or args.deploy_head)]
    if sum(ways) != 1:
        raise InputError("gpu-gate: give the installs one way: --baseline and --candidate "
                         "site directories, --install FILE, or --deploy-base and "
                         "--deploy-head checkouts")
    installs = None
    if args.install:
        installs = read_install_file(args.install)
    elif args.deploy_base or args.deploy_head:
        nightly = args.nightly_versions is not None
        if not args.deploy_base or bool(args.deploy_head) == nightly:
            raise InputError("gpu-gate: --deploy-base goes with --deploy-head, or with "
                             "--nightly-versions")
        variant = args.cuda_variant
        if variant == "auto":
            from bot.commands.gpu_gate import runner_cuda_variant

            variant = runner_cuda_variant()
        if nightly:
            from bot.commands.gpu_gate import nightly_lists

            installs = nightly_lists(args.deploy_base, args.nightly_versions, variant)
        else:
            installs = deploy_lists(args.deploy_base, args.deploy_head, variant)
    min_tests = args.min_tests
    if min_tests is None and args.job:
        from bot.commands.context import load_workspace

        policy_repo = args.policy_repo or args.deploy_base
        if policy_repo is None:
            raise InputError("gpu-gate --job: name the base checkout with --deploy-base or "
                             "--policy-repo")
        min_tests = load_workspace(policy_repo).policy.gate_min_tests.get(args.job)
    # absolute: pytest and the timing workers run in other folders
    opts = GateOptions(baseline=_absolute(args.baseline), candidate=_absolute(args.candidate),
                       out=args.out.resolve(), tests=(args.tests or default_tests_dir()).resolve(),
                       extra_paths=tuple(p.resolve() for p in args.extra_path),
                       rounds=args.rounds,
                       samples_per_round=args.samples_per_round, threshold=args.threshold,
                       pytest_args=tuple(args.pytest_arg), perf=not args.no_perf,
                       tests_run=not args.no_tests, workspace=_absolute(args.workspace),
                       min_tests=1 if min_tests is None else min_tests,
                       fused_world=args.fused_world,
                       installs=installs)
    report = run_gate(opts, sys.stderr)
    sys.stdout.write(gate_json(report) if args.json else gate_markdown(report))
    return 0 if report.passed else 1


def cmd_bisect(args: argparse.Namespace) -> int:
    import json

    from bot.adapters.writer import write_file
    from bot.commands.bisect import BisectOptions, run_bisect
    from bot.commands.gpu_gate import default_tests_dir
    from bot.core.bisect import (
        BisectVerdict,
        bisect_markdown,
        failing_test_ids,
        read_gate_result,
    )
    from bot.render.jsonout import to_json

    if args.comment_pr is not None and not args.github_repo:
        raise InputError("--comment-pr needs --github-repo")
    if args.gate_result:
        try:
            text = args.gate_result.read_bytes()[:5_000_000].decode("utf-8", "replace")
        except OSError as exc:
            raise InputError(f"--gate-result {args.gate_result}: cannot read it "
                             f"({exc.strerror})") from None
        candidate, tests = read_gate_result(text, f"--gate-result {args.gate_result}")
        bad = args.bad or candidate
        if args.test:
            tests = failing_test_ids(args.test, "--test")
    else:
        if not (args.test and args.bad):
            raise InputError("bisect: give --gate-result, or --test and --bad")
        tests, bad = failing_test_ids(args.test, "--test"), args.bad
    opts = BisectOptions(out=args.out.resolve(),
                         tests_dir=(args.tests or default_tests_dir()).resolve(),
                         tests=tests, bad=bad, good=args.good, cuda_variant=args.cuda_variant,
                         nightlies=args.nightlies, retries=args.step_retries, confirm=args.confirm,
                         extra_paths=tuple(p.resolve() for p in args.extra_path),
                         workspace=_absolute(args.workspace))
    github = None
    if args.comment_pr is not None:  # the token is checked before hours of GPU work
        gh_opts = _github_options(args)
        github = gh_opts.client(gh_opts.token() or "")
    result = run_bisect(opts, plan_options(args), sys.stderr)
    document = to_json(result.as_dict())
    write_file(args.out / "bisect.json", document.encode())
    if github is not None:
        github.comment(args.comment_pr, bisect_markdown(result))
        print(f"pinbump: bisect verdict posted on #{args.comment_pr}", file=sys.stderr)
    if args.json:
        sys.stdout.write(document)
    else:
        print(result.message)
        if result.verdict == BisectVerdict.FOUND:
            print(f"[known-bad.{result.package}]\n\"{result.first_bad}\" = "
                  f"{json.dumps(result.reason())}")
    return 0 if result.verdict == BisectVerdict.FOUND else 1


def main(argv: Sequence[str] | None = None) -> int:
    for stream in (sys.stdout, sys.stderr):  # a file name that is not UTF-8 (surrogates):
        reconfigure = getattr(stream, "reconfigure", None)  # escaped, never a traceback
        if reconfigure is not None:
            reconfigure(errors="backslashreplace")
    parser = build_parser()
    args = parser.parse_args(argv)
    handler: Callable[[argparse.Namespace], int] = args.handler
    try:
        return handler(args)
    except PinbumpError as exc:
        print(f"pinbump: error: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("pinbump: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
