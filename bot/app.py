"""Wiring: options in, adapters built, pure core called. Shared by the CLI and the tests."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from bot.config import Policy, config_names, load_policy, root_policy_for_discovery
from bot.discovery import Target, discover
from bot.environment import Environment
from bot.errors import InputError
from bot.http import HttpClient, default_cache_dir
from bot.index import SimpleIndex
from bot.models import Plan
from bot.resolve import cutoff_for, make_plan
from bot.sources import IndexSource


@dataclass(frozen=True)
class PlanOptions:
    repo: Path
    group: str | None = None
    as_of: str | None = None
    index_url: str | None = None
    min_release_age: float | None = None
    cache_dir: Path | None = None
    no_cache: bool = False
    timeout: float = 20.0
    retries: int = 3

    @property
    def cache(self) -> Path | None:
        return None if self.no_cache else (self.cache_dir or default_cache_dir())


@dataclass
class Planned:
    plan: Plan
    target: Target
    policy: Policy
    http: HttpClient
    index: SimpleIndex


def load_target(opts: PlanOptions) -> tuple[Target, Policy]:
    root = opts.repo
    if not root.is_dir():
        raise InputError(f"{root}: not a directory (pass the target repository with --repo)")
    names = root_policy_for_discovery(root)
    target = discover(root, names)
    policy = load_policy(target, {
        "group": opts.group,
        "index_url": opts.index_url,
        "min_release_age_days": opts.min_release_age,
    })
    extra = config_names(policy) - names
    if extra:
        target = discover(root, names | extra)
    return target, policy


@contextmanager
def planned(opts: PlanOptions, *, http: HttpClient | None = None,
            status: Callable[[str], AbstractContextManager[object]] | None = None
            ) -> Iterator[Planned]:
    """Discover, read the policy, query the index and resolve; the client stays open inside."""
    target, policy = load_target(opts)
    own = http is None
    client = http or HttpClient(opts.cache, timeout=opts.timeout, retries=opts.retries)
    try:
        index = SimpleIndex(client, opts.cache)
        group = policy.active_group
        env = Environment.for_target(target.requires_python(group.lead), policy.python)
        source = IndexSource(index, policy, env)
        with (status or (lambda _msg: nullcontext()))(
                f"querying the index for {', '.join(group.members)}"):
            source.prefetch(group.members)
            now = cutoff_for(opts.as_of, datetime.now(timezone.utc))
            plan = make_plan(target, policy, source, now, as_of=bool(opts.as_of))
        yield Planned(plan=plan, target=target, policy=policy, http=client, index=index)
    finally:
        if own:
            client.close()
