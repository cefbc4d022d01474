"""pinbump bisect: the first bad published version of the lead between the current pin and a
target the GPU gate failed, running only the failing tests per step through the gate's own
machinery (the deployed packages installed from the plan's indexes, the suite in its own
process with its own JIT workspace); the verdict and its evidence, optionally as a comment on
the bot PR with the [known-bad] entry to add."""

from __future__ import annotations

import shutil
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import IO

from packaging.version import InvalidVersion, Version

from bot.adapters.installer import install
from bot.commands.context import PlanOptions, load_workspace, open_services
from bot.commands.gpu_gate import GateOptions, package_indexes, run_suite
from bot.core.artifacts import InstallSpec, deploy_specs
from bot.core.bisect import ERROR, FAIL, PASS, BisectResult, StepResult, between, bisect
from bot.core.gate_report import parse_junit
from bot.core.models import Channel
from bot.errors import GateRunError, InputError, PinbumpError


@dataclass(frozen=True)
class BisectOptions:
    out: Path
    tests_dir: Path
    tests: tuple[str, ...]  # failing test ids, "module::test[param]"
    bad: str
    good: str | None = None  # default: the target's pin of the lead
    cuda_variant: str | None = None
    nightlies: bool = False
    retries: int = 2
    confirm: int = 1
    extra_paths: tuple[Path, ...] = ()
    workspace: Path | None = None
    test_timeout: float = 1800.0


def _version(flag: str, text: str) -> Version:
    try:
        return Version(text)
    except InvalidVersion:
        raise InputError(f"{flag} {text!r}: not a version") from None


def node_id(tests_dir: Path, test: str) -> str:
    """A JUnit test id (``module[.Class]::name``) as a pytest node id inside ``tests_dir``."""
    classname, _, name = test.partition("::")
    parts = classname.split(".")
    for cut in range(len(parts), 0, -1):
        module = tests_dir.joinpath(*parts[:cut]).with_suffix(".py")
        if module.is_file() and module.resolve().is_relative_to(tests_dir.resolve()):
            return "::".join([str(module), *parts[cut:], name])
    raise InputError(f"{test}: no module {classname!r} in {tests_dir}")


def step_result(tests: Sequence[str], junit_text: str) -> StepResult:
    summary = parse_junit(junit_text)
    texts = dict(summary.failure_texts)
    failing = tuple(t for t in tests if t in summary.failed)
    if failing:
        head = (texts.get(failing[0], "") or "").splitlines()[:1]
        return StepResult(FAIL, failing, head[0][:300] if head else "")
    if summary.tests == len(tests) and summary.skipped == 0 and summary.ok:
        return StepResult(PASS)
    return StepResult(ERROR, (), f"{summary.tests} of {len(tests)} tests collected, "
                                 f"{summary.skipped} skipped: no answer")


def gate_runner(opts: BisectOptions, specs_for: Callable[[str], list[InstallSpec]],
                log: IO[str]) -> Callable[[str], StepResult]:
    """Run the named tests against one version, as the gate does (fresh install per version,
    kept across re-runs of that version)."""
    nodes = tuple(node_id(opts.tests_dir, t) for t in opts.tests)
    counter = iter(range(1, 10_000))
    installed: set[str] = set()

    def run(version: str) -> StepResult:
        n = next(counter)
        site = opts.out / "sites" / version
        step = opts.out / f"step-{n:02d}-{version}"
        try:
            if version not in installed:
                if site.exists():
                    shutil.rmtree(site)
                install(specs_for(version), site, log)
                installed.add(version)
            gopts = GateOptions(baseline=site, candidate=site, out=step, tests=opts.tests_dir,
                                extra_paths=opts.extra_paths, perf=False,
                                test_timeout=opts.test_timeout,
                                workspace=opts.workspace or opts.out,
                                select=nodes, pytest_args=("-m", "gpu or not gpu"))
            step.mkdir(parents=True, exist_ok=True)
            run_suite(site, "candidate", gopts, log)
            result = step_result(opts.tests, (step / "junit-candidate.xml").read_text())
        except (GateRunError, OSError) as exc:
            result = StepResult(ERROR, (), str(exc)[:300])
        log.write(f"[bisect] {version}: {result.outcome}"
                  f"{' ' + ', '.join(result.failing) if result.failing else ''}\n")
        return result

    return run


def run_bisect(opts: BisectOptions, plan_opts: PlanOptions, log: IO[str],
               runner: Callable[[str], StepResult] | None = None) -> BisectResult:
    """Bisect ``opts.bad`` against the pin (or ``opts.good``); ``runner`` replaces the gate."""
    from bot.adapters.sources import IndexSource
    from bot.commands.plan import index_model

    for flag, value in (("--step-retries", opts.retries), ("--confirm", opts.confirm)):
        if not 0 <= value <= 10:
            raise InputError(f"{flag} {value}: must be between 0 and 10")
    ws = load_workspace(plan_opts.repo, plan_opts.overrides)
    policy, group = ws.policy, ws.group
    lead, packages = group.lead, (group.lead, *group.lockstep)
    pins = sorted({p.exact for p in ws.target.pins if p.package == lead and p.exact})
    if opts.good is None and len(pins) != 1:
        raise InputError(f"{plan_opts.repo}: expected one exact pin of {lead}, found "
                         f"{', '.join(map(str, pins)) or 'none'} (pass --good)")
    good = _version("--good", opts.good) if opts.good else pins[0]
    bad = _version("--bad", opts.bad)
    nightlies = opts.nightlies or policy.channel == Channel.NIGHTLY
    models = {Channel.STABLE: index_model(ws.target, replace(policy, channel=Channel.STABLE))}
    if nightlies:
        models[Channel.NIGHTLY] = index_model(ws.target, replace(policy, channel=Channel.NIGHTLY))
    channel_of: dict[Version, Channel] = {}
    with open_services(plan_opts) as services:
        services.http.authorize(policy.credentials)
        for channel, model in models.items():
            source = IndexSource(services.index, policy, ws.env, model)
            try:
                for ref in model.for_package(lead):
                    try:
                        releases = source.releases_on(lead, ref)
                    except PinbumpError as exc:
                        log.write(f"[bisect] {ref.url}: {exc}\n")
                        continue
                    for version, files in releases.items():
                        if any(f.is_wheel and f.yanked is None for f in files):
                            channel_of.setdefault(version, channel)
            finally:
                source.close()
    versions = between(channel_of, good, bad, prereleases=nightlies)
    indexes = {ch: package_indexes(m, packages, opts.cuda_variant) for ch, m in models.items()}
    deployed = [p for p in packages if any(pin.package == p and pin.exact
                                           for pin in ws.target.pins)]

    def specs_for(version: str) -> list[InstallSpec]:
        channel = channel_of.get(Version(version), Channel.STABLE)
        return deploy_specs([(p, version) for p in deployed], indexes[channel],
                            f"bisect {version}")

    log.write(f"[bisect] {lead}: {len(versions)} versions from {good} to {bad}\n")
    opts.out.mkdir(parents=True, exist_ok=True)
    return bisect(versions, runner or gate_runner(opts, specs_for, log), package=lead,
                  tests=opts.tests, retries=opts.retries, confirm=opts.confirm)
