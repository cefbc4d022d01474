"""Plain data passed between the pure core and the adapters."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from enum import Enum

from packaging.requirements import Requirement
from packaging.version import Version


class Vocabulary(str, Enum):
    """A closed set of words; each member is also its string (for JSON and comparisons)."""

    def __str__(self) -> str:
        return str(self.value)


class Channel(Vocabulary):
    """Which of FlashInfer's builds a plan is made against (``--channel``)."""

    STABLE = "stable"
    NIGHTLY = "nightly"  # pre-releases from .../whl/nightly, tried the day they land


class PinKind(Vocabulary):
    """How a pin is written, hence which editor moves it."""

    REQUIREMENT = "requirement"  # a requirement string (pyproject, requirements, setup.py/cfg)
    # a bare version on its line: a Dockerfile ARG default, a CI shell variable, a JSON value
    # under a Docker ARG's name, a `git clone --branch v<version>`, a VCS ref
    LITERAL = "literal"


class FileKind(Vocabulary):
    """How discovery reads a file (``discovery.file_kind``)."""

    PYPROJECT = "pyproject"
    REQUIREMENTS = "requirements"
    SETUP_PY = "setup-py"
    SETUP_CFG = "setup-cfg"
    DOCKERFILE = "dockerfile"
    SHELL = "shell"
    JSON = "json"


class SiteKind(Vocabulary):
    """What drift found at a place in the target's code."""

    CALL = "call"  # a call whose arguments can be read
    REFERENCE = "reference"  # a name reached without a call we can read


class Via(Vocabulary):
    """How a reference reaches the lead's API."""

    DIRECT = ""  # not a reference: a call
    STRING = "string"  # a string naming it ("flashinfer.gemm", a lazy-import pair)
    GETATTR = "getattr"
    HASATTR = "hasattr"


class Severity(Vocabulary):
    """How a drift finding bears on a call site, most serious first (the report's order)."""

    BREAKING = "breaking"  # fails or binds differently under the new version
    REVIEW = "review"  # binds as before, may compute something else (defaults, advisories)
    UNVERIFIABLE = "unverifiable"  # passed through *args/**kwargs: binding cannot be read
    NOTICE = "notice"  # binds as before; the API around it changed


class EditKind(Vocabulary):
    """Which editor made an edit (apply's ``kind``; the PR body groups edits by it)."""

    REQUIREMENT = "requirement"  # a requirement string: pyproject, requirements, setup.py/cfg
    DOCKERFILE_ARG = "dockerfile-arg"  # an ARG/ENV default
    DOCKERFILE_RUN = "dockerfile-run"  # a literal pin in a RUN install
    ASSERTION = "assertion"  # a version check in Python
    DOC = "doc"  # a documented example
    LITERAL = "literal"  # a bare version: CI variable, versions JSON, git ref
    CODEMOD = "codemod"  # a call rewritten by drift's keyword-binding codemod


@dataclass(frozen=True)
class Pin:
    """One requirement string of the target that names a package of a group."""

    package: str  # PEP 503-normalized
    requirement: str  # the text as written, e.g. "flashinfer_python[cu13]==0.6.12"
    file: str  # path relative to the target root, with forward slashes
    line: int  # 1-based
    section: str  # "project.dependencies", "dependency-groups.test", "requirements", ...
    kind: PinKind = PinKind.REQUIREMENT
    literal: str = ""  # for "literal" pins: the version exactly as written
    frozen: str = ""  # why apply must not edit it (hash-pinned, ===): listed as unchanged

    @property
    def parsed(self) -> Requirement:
        return Requirement(self.requirement)

    @property
    def exact(self) -> Version | None:
        """The version of a single ``==X`` clause (no wildcard), else None."""
        for spec in self.parsed.specifier:
            if spec.operator in ("==", "===") and not spec.version.endswith(".*"):
                return Version(spec.version)
        return None

    @property
    def floor(self) -> Version | None:
        """The version of a ``>=X`` clause, else None."""
        for spec in self.parsed.specifier:
            if spec.operator == ">=":
                return Version(spec.version)
        return None

    @property
    def current(self) -> Version | None:
        return self.exact or self.floor

    @property
    def where(self) -> str:
        return f"{self.file}:{self.line}"


@dataclass(frozen=True)
class DistFile:
    """One file of a project page (PEP 503 HTML or PEP 691 JSON)."""

    filename: str
    url: str
    version: Version
    is_wheel: bool
    tags: frozenset[str]  # wheel tags as "py3-none-any"; empty for sdists
    hashes: tuple[tuple[str, str], ...] = ()
    requires_python: str | None = None
    yanked: str | None = None  # None: not yanked; "" or a reason: yanked
    upload_time: datetime | None = None  # PEP 700, when the index gives it
    core_metadata: bool | tuple[tuple[str, str], ...] = False  # PEP 658/714
    size: int | None = None

    @property
    def sha256(self) -> str | None:
        return dict(self.hashes).get("sha256")


@dataclass(frozen=True)
class ProjectPage:
    name: str  # normalized
    url: str
    files: tuple[DistFile, ...]

    def versions(self) -> dict[Version, list[DistFile]]:
        out: dict[Version, list[DistFile]] = {}
        for f in self.files:
            out.setdefault(f.version, []).append(f)
        return out


@dataclass(frozen=True)
class Rejection:
    package: str
    version: str
    reason: str
    uploaded: datetime | None = None
    source: str = ""  # where the reason comes from (an advisory's link, the config file)


@dataclass(frozen=True)
class Change:
    package: str
    current: str
    target: str
    specifier_before: str
    specifier_after: str
    pins: tuple[Pin, ...]
    reason: str

    @property
    def files(self) -> list[str]:
        return [p.where for p in self.pins]


@dataclass
class Plan:
    group: str
    lead: str
    lead_current: str
    lead_target: str
    changes: list[Change] = field(default_factory=list)
    rejected: list[Rejection] = field(default_factory=list)
    unchanged: list[tuple[str, str, str]] = field(default_factory=list)  # package, spec, why
    not_verified: list[tuple[str, str]] = field(default_factory=list)  # package, why
    found_on: dict[str, str] = field(default_factory=dict)  # package -> index of its target
    unreachable: list[IndexProblem] = field(default_factory=list)
    hints: list[str] = field(default_factory=list)  # fixes, e.g. where a package moved to
    warnings: list[str] = field(default_factory=list)  # e.g. the current pin is known bad
    skipped: list[tuple[str, str]] = field(default_factory=list)  # file, why it was not read
    platforms: str = ""  # what every package of the set was checked for
    channel: Channel = Channel.STABLE


class PerfVerdict(Vocabulary):
    """What the GPU gate's timing comparison of one kernel says."""

    REGRESSION = "regression"  # the ratio's 95% interval lies above 1 + threshold
    IMPROVEMENT = "improvement"  # ... below 1 - threshold
    NO_CHANGE = "no change"
    INVALID = "invalid"  # the timings cannot be trusted (physically impossible, too few)


# -- GitHub, as data -------------------------------------------------------------------------
class PrState(Vocabulary):
    """A pull request's state on GitHub (merged is a closed PR with ``merged``)."""

    OPEN = "open"
    CLOSED = "closed"


class StatusState(Vocabulary):
    """A commit status pinbump sets (GitHub's states; read back as a ``CheckState``)."""

    PENDING = "pending"
    SUCCESS = "success"
    FAILURE = "failure"
    ERROR = "error"  # could not be computed (read back as a failure)


class MergeMethod(Vocabulary):
    """How the gate merges a green bot PR (``merge-method``)."""

    MERGE = "merge"
    SQUASH = "squash"
    REBASE = "rebase"


class RebaseWhen(Vocabulary):
    """When ``run`` rebases an unchanged bot branch whose base moved (``rebase-when``)."""

    CONFLICTED = "conflicted"  # only when GitHub reports a conflict
    BEHIND = "behind"  # whenever the base moved
    NEVER = "never"  # only on request (/pinbump rebase)


class CheckState(Vocabulary):
    """A check run or commit status of one SHA, in one vocabulary."""

    SUCCESS = "success"
    FAILURE = "failure"
    PENDING = "pending"


@dataclass(frozen=True)
class PullInfo:
    number: int
    head_ref: str
    head_sha: str
    title: str
    body: str
    state: PrState
    merged: bool
    labels: tuple[str, ...]
    url: str
    author: str = ""  # login of the account that opened it
    head_repo: str = ""  # OWNER/NAME of the head branch's repository ("" when it is gone)
    base_repo: str = ""
    base_ref: str = ""
    mergeable_state: str = ""  # GitHub's: clean, dirty, behind, blocked, unstable, unknown...


@dataclass(frozen=True)
class IssueInfo:
    number: int
    title: str
    body: str
    url: str


@dataclass(frozen=True)
class Check:
    """A check run or a commit status on one SHA."""

    name: str
    state: CheckState | str
    url: str
    sha: str


@dataclass(frozen=True)
class IndexProblem:
    """An index that could not be read for a package, and what was verified elsewhere."""

    package: str
    url: str
    error: str
    verified: str  # "verified on https://pypi.org/simple up to 0.6.13", or ""

    def __str__(self) -> str:
        tail = f"; {self.verified}" if self.verified else "; nothing verified elsewhere"
        return f"{self.package}: {self.url} unreachable ({self.error}){tail}"
