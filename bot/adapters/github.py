"""Adapter: the GitHub REST API through PyGithub, and nothing else.

Timeouts on every request; secondary and primary rate limits (Retry-After,
x-ratelimit-reset) and transient 5xx are retried a bounded number of times by PyGithub's
GithubRetry. The token is read from the environment by the caller, handed to PyGithub only,
and scrubbed from every error message.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from bot.errors import PinbumpError

DEFAULT_API = "https://api.github.com"


class GitHubError(PinbumpError):
    """A GitHub API call failed."""


@dataclass(frozen=True)
class PullInfo:
    number: int
    head_ref: str
    head_sha: str
    base_ref: str
    title: str
    body: str
    state: str
    merged: bool
    labels: tuple[str, ...]
    url: str


@dataclass(frozen=True)
class IssueInfo:
    number: int
    title: str
    body: str
    url: str


@dataclass(frozen=True)
class Check:
    """A check run or a commit status on one SHA, in one vocabulary."""

    name: str
    state: str  # success | failure | pending
    url: str
    sha: str


class GitHub:
    def __init__(self, repo: str, token: str, *, base_url: str = DEFAULT_API,
                 timeout: int = 15, retries: int = 5, secondary_wait: float = 60.0,
                 max_rate_limit_wait: float = 900.0, write_interval: float = 1.0) -> None:
        """``write_interval``: seconds between writes (GitHub asks integrations for at least
        one second to stay clear of secondary rate limits); reads are paced at a quarter."""
        from github import Auth, Github, GithubRetry

        self._token = token
        self._repo_name = repo
        retry = GithubRetry(total=retries, secondary_rate_wait=secondary_wait,
                            max_rate_limit_wait=max_rate_limit_wait, backoff_factor=0.5)
        self._gh = Github(base_url=base_url, auth=Auth.Token(token), timeout=timeout,
                          retry=retry, per_page=100, seconds_between_writes=write_interval,
                          seconds_between_requests=write_interval / 4)
        self._repo: Any = None

    # -- the door: every call goes through here so errors are uniform and token-free ------
    def _call(self, what: str, fn: Any, *args: Any, **kwargs: Any) -> Any:
        from github import GithubException
        from requests import RequestException

        try:
            return fn(*args, **kwargs)
        except GithubException as exc:
            message = exc.data.get("message") if isinstance(exc.data, dict) else exc.data
            raise GitHubError(self._scrub(f"GitHub {what} failed: HTTP {exc.status}: "
                                          f"{message}")) from None
        except RequestException as exc:
            raise GitHubError(self._scrub(f"GitHub {what} failed: {type(exc).__name__}: "
                                          f"{exc}")) from None

    def _scrub(self, text: str) -> str:
        return text.replace(self._token, "***") if self._token else text

    @property
    def repo(self) -> Any:
        if self._repo is None:
            self._repo = self._call(f"reading {self._repo_name}", self._gh.get_repo,
                                    self._repo_name)
        return self._repo

    @staticmethod
    def _pull(pr: Any) -> PullInfo:
        return PullInfo(number=pr.number, head_ref=pr.head.ref, head_sha=pr.head.sha,
                        base_ref=pr.base.ref, title=pr.title, body=pr.body or "",
                        state=pr.state, merged=bool(pr.merged_at),
                        labels=tuple(label.name for label in pr.labels), url=pr.html_url)

    # -- pull requests ---------------------------------------------------------------------
    def open_pulls(self, base: str, head_prefix: str) -> list[PullInfo]:
        pulls = self._call("listing pull requests",
                           lambda: list(self.repo.get_pulls(state="open", base=base)))
        return [self._pull(p) for p in pulls if p.head.ref.startswith(head_prefix)]

    def pull(self, number: int) -> PullInfo:
        return self._pull(self._call(f"reading PR #{number}", self.repo.get_pull, number))

    def create_pull(self, *, title: str, body: str, head: str, base: str) -> PullInfo:
        pr = self._call("opening the pull request", self.repo.create_pull, title=title,
                        body=body, head=head, base=base)
        return self._pull(pr)

    def edit_pull(self, number: int, **fields: Any) -> None:
        pr = self._call(f"reading PR #{number}", self.repo.get_pull, number)
        self._call(f"editing PR #{number}", pr.edit, **fields)

    def merge(self, number: int, sha: str, method: str, title: str) -> None:
        pr = self._call(f"reading PR #{number}", self.repo.get_pull, number)
        self._call(f"merging PR #{number}", pr.merge, merge_method=method, sha=sha,
                   commit_title=title)

    def request_reviewers(self, number: int, reviewers: list[str]) -> None:
        pr = self._call(f"reading PR #{number}", self.repo.get_pull, number)
        self._call(f"requesting reviewers on #{number}", pr.create_review_request,
                   reviewers=reviewers)

    # -- issues, comments, labels ----------------------------------------------------------
    def comments(self, number: int) -> list[str]:
        issue = self._call(f"reading #{number}", self.repo.get_issue, number)
        return [c.body or "" for c in self._call(f"reading comments of #{number}",
                                                 lambda: list(issue.get_comments()))]

    def comment(self, number: int, body: str) -> None:
        issue = self._call(f"reading #{number}", self.repo.get_issue, number)
        self._call(f"commenting on #{number}", issue.create_comment, body)

    def ensure_labels(self, names: list[str]) -> None:
        from github import GithubException

        for name in names:
            try:
                self.repo.get_label(name)
            except GithubException as exc:
                if exc.status != 404:
                    raise GitHubError(self._scrub(f"GitHub reading label {name!r} failed: "
                                                  f"HTTP {exc.status}")) from None
                self._call(f"creating label {name!r}", self.repo.create_label, name,
                           "0e8a16", "Managed by pinbump")

    def add_labels(self, number: int, names: list[str]) -> None:
        # The object form: GitHub's OpenAPI description does not admit the bare array that
        # PyGithub's Issue.add_to_labels sends.
        self._call(f"labelling #{number}", self._gh.requester.requestJsonAndCheck, "POST",
                   f"/repos/{self._repo_name}/issues/{number}/labels",
                   input={"labels": names})

    def find_issue(self, title: str, label: str) -> IssueInfo | None:
        issues = self._call("listing issues", lambda: list(
            self.repo.get_issues(state="open", labels=[label])))
        for issue in issues:
            if issue.title == title and issue.pull_request is None:
                return IssueInfo(issue.number, issue.title, issue.body or "", issue.html_url)
        return None

    def create_issue(self, title: str, body: str, labels: list[str]) -> IssueInfo:
        issue = self._call("creating the dashboard issue", self.repo.create_issue,
                           title=title, body=body, labels=labels)
        return IssueInfo(issue.number, issue.title, issue.body or "", issue.html_url)

    def edit_issue(self, number: int, body: str) -> None:
        issue = self._call(f"reading #{number}", self.repo.get_issue, number)
        self._call(f"editing #{number}", issue.edit, body=body)

    # -- actions and checks ----------------------------------------------------------------
    def dispatch(self, workflow: str, ref: str, inputs: dict[str, str]) -> None:
        flow = self._call(f"reading workflow {workflow}", self.repo.get_workflow, workflow)
        ok = self._call(f"dispatching {workflow}", flow.create_dispatch, ref, inputs)
        if ok is False:
            raise GitHubError(f"GitHub refused to dispatch {workflow} on {ref}")

    def checks(self, sha: str) -> list[Check]:
        """Check runs and commit statuses of exactly this SHA."""
        requester = self._gh.requester
        base = f"/repos/{self._repo_name}/commits/{sha}"
        _, runs = self._call("reading check runs", requester.requestJsonAndCheck, "GET",
                             f"{base}/check-runs", {"per_page": 100})
        _, combined = self._call("reading commit statuses", requester.requestJsonAndCheck,
                                 "GET", f"{base}/status", {"per_page": 100})
        out = []
        for run in runs.get("check_runs", []):
            if run.get("head_sha") != sha:
                continue
            if run.get("status") != "completed":
                state = "pending"
            elif run.get("conclusion") in ("success", "neutral", "skipped"):
                state = "success"
            else:
                state = "failure"
            out.append(Check(run["name"], state, run.get("html_url") or "", sha))
        for status in combined.get("statuses", []):
            state = {"success": "success", "pending": "pending"}.get(status["state"], "failure")
            out.append(Check(status["context"], state, status.get("target_url") or "", sha))
        return out

    def set_status(self, sha: str, context: str, state: str, target_url: str = "",
                   description: str = "") -> None:
        body = {"state": state, "context": context, "description": description[:140]}
        if target_url:
            body["target_url"] = target_url
        self._call(f"setting status {context} on {sha[:12]}",
                   self._gh.requester.requestJsonAndCheck, "POST",
                   f"/repos/{self._repo_name}/statuses/{sha}", input=body)
