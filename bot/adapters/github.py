"""Adapter: the GitHub REST API through PyGithub, and nothing else.

Timeouts on every request; secondary and primary rate limits (Retry-After,
x-ratelimit-reset) and transient 5xx are retried a bounded number of times by PyGithub's
GithubRetry. The token is read from the environment by the caller, handed to PyGithub only,
and scrubbed from every error message.
"""

from __future__ import annotations

import ipaddress
import time
from dataclasses import dataclass, field
from typing import Any, Protocol
from urllib.parse import urlsplit

from bot.core.botpr import CommitAuthor
from bot.core.chatops import WRITE_ROLES
from bot.core.models import Check, CheckState, IssueInfo, PrState, PullInfo, StatusState
from bot.core.release_notes import Release
from bot.errors import GitHubError, InputError

DEFAULT_API = "https://api.github.com"
# Seconds before the first retry of a failed call (a dropped connection, a 5xx); urllib3 doubles
# it for each further retry: 0, 1, 2, 4 and 8 s over five. Rate limits wait as GitHub says.
RETRY_BACKOFF = 0.5


def check_api_url(url: str) -> str:
    """The token goes only to an https API, or to plain http on loopback (the tests)."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    if parts.scheme == "https" and host:
        return url
    if parts.scheme == "http" and host:
        try:
            loopback = host == "localhost" or ipaddress.ip_address(host).is_loopback
        except ValueError:
            loopback = False
        if loopback:
            return url
    raise InputError(f"--api-url {url!r}: the token is sent only to an https:// API URL "
                     "(or http:// on loopback for tests)")


def _budget_retry(deadline: float | None, **kwargs: Any) -> Any:
    """PyGithub's GithubRetry, with every rate-limit wait bounded by what is left of the
    command's time budget: a wait beyond it is an error, not a sleep."""
    from github import GithubRetry
    from github.GithubException import RateLimitExceededExceedsMaxWait

    class BudgetRetry(GithubRetry):
        def __init__(self, deadline: float | None = None, **kw: Any) -> None:
            self.deadline = deadline
            super().__init__(**kw)

        def new(self, **kw: Any) -> Any:
            kw["deadline"] = self.deadline
            return super().new(**kw)

        def increment(self, method: Any = None, url: Any = None, response: Any = None,
                      error: Any = None, _pool: Any = None, _stacktrace: Any = None) -> Any:
            if self.deadline is not None:
                left = max(self.deadline - time.monotonic(), 0.0)
                self.max_rate_limit_wait = left
                after = response.headers.get("Retry-After") if response is not None else None
                if after is not None:
                    try:
                        wait = float(after)
                    except ValueError:
                        wait = float("inf")
                    if not wait <= left:
                        raise RateLimitExceededExceedsMaxWait(
                            response.status, {"message": "rate limited"}, response.headers,
                            wait=wait)
            return super().increment(method, url, response, error, _pool, _stacktrace)

    return BudgetRetry(deadline=deadline, **kwargs)


def app_installation_token(repo: str, app_id: str, private_key: str,
                           base_url: str = DEFAULT_API) -> str:
    """A GitHub App's installation token for ``repo``: a JWT signed with the App's private key
    finds the installation (GET /repos/{owner}/{repo}/installation) and is exchanged for a
    one-hour token (POST /app/installations/{id}/access_tokens). The key never leaves."""
    from github import Auth, GithubException, GithubIntegration
    from jwt import PyJWTError
    from requests import RequestException

    check_api_url(base_url)
    owner, name = repo.split("/", 1)
    try:
        auth = Auth.AppAuth(app_id, private_key)
        auth.create_jwt()
    except (ValueError, TypeError, PyJWTError) as exc:
        raise InputError(f"--app-id {app_id}: the private key is not a usable PEM RSA key "
                         f"({type(exc).__name__})") from None
    integration = GithubIntegration(auth=auth, base_url=base_url)
    try:
        installation = integration.get_repo_installation(owner, name)
        granted = integration.get_access_token(installation.id)
        token, permissions = str(granted.token), granted.raw_data.get("permissions")
    except GithubException as exc:
        message = exc.data.get("message") if isinstance(exc.data, dict) else exc.data
        raise GitHubError(f"GitHub App {app_id}: exchanging its JWT for an installation token "
                          f"of {repo} failed: HTTP {exc.status}: {message} (is the App "
                          "installed on the repository?)") from None
    except RequestException as exc:
        raise GitHubError(f"GitHub App {app_id}: exchanging its JWT failed: "
                          f"{type(exc).__name__}") from None
    missing = app_permissions_missing(permissions)
    if missing:
        raise GitHubError(f"preflight: GitHub App {app_id} lacks {', '.join(missing)} on "
                          f"{repo} (grant it in the App's settings and accept it on the "
                          "installation); nothing was changed")
    return token


# What pinbump's commands write with an App's installation token (README: "GitHub App").
APP_PERMISSIONS = {"contents": "write", "pull_requests": "write", "issues": "write",
                   "actions": "write", "statuses": "write", "checks": "read"}


def app_permissions_missing(granted: Any) -> list[str]:
    """The permissions the installation token lacks, from the ``permissions`` GitHub returns
    with it (an installation token, unlike a PAT, says what it may do): checked before any
    write, so a run never pushes a branch it then cannot open a PR for."""
    if not isinstance(granted, dict):
        return []  # not reported: the preflight's own checks remain
    rank = {"read": 1, "write": 2}
    return [f"{name}: {level}" for name, level in APP_PERMISSIONS.items()
            if rank.get(str(granted.get(name)), 0) < rank[level]]


class GitHub:
    def __init__(self, repo: str, token: str, *, base_url: str = DEFAULT_API,
                 timeout: int = 15, retries: int = 5, secondary_wait: float = 60.0,
                 max_rate_limit_wait: float = 900.0, write_interval: float = 1.0,
                 budget: float | None = None) -> None:
        """``write_interval``: seconds between writes (GitHub asks integrations for at least
        one second to stay clear of secondary rate limits); reads are paced at a quarter.
        ``budget``: seconds this command may still take; no rate-limit wait goes beyond it."""
        from github import Auth, Github

        check_api_url(base_url)
        self._token = token
        self._repo_name = repo
        deadline = None if budget is None else time.monotonic() + budget
        retry = _budget_retry(deadline, total=retries, secondary_rate_wait=secondary_wait,
                              max_rate_limit_wait=max_rate_limit_wait,
                              backoff_factor=RETRY_BACKOFF)
        self._gh = Github(base_url=base_url, auth=Auth.Token(token), timeout=timeout,
                          retry=retry, per_page=100, seconds_between_writes=write_interval,
                          seconds_between_requests=write_interval / 4)
        self._repo: Any = None
        self._me: str | None = None  # identity(), once read

    # -- the door: every call goes through here so errors are uniform and token-free ------
    def _call(self, what: str, fn: Any, *args: Any, **kwargs: Any) -> Any:
        from github import GithubException
        from requests import RequestException

        try:
            return fn(*args, **kwargs)
        except (GithubException, RequestException) as exc:
            raise self._error(what, exc) from None

    def _error(self, what: str, exc: Exception) -> GitHubError:
        """One token-free, one-line error for any failed call."""
        from github import GithubException
        from github.GithubException import RateLimitExceededExceedsMaxWait

        if isinstance(exc, RateLimitExceededExceedsMaxWait):
            return GitHubError(f"GitHub {what} failed: rate limited for {exc.wait:.0f}s, "
                               "beyond the command's time budget (--budget); nothing waited")
        if isinstance(exc, GithubException):
            message = exc.data.get("message") if isinstance(exc.data, dict) else exc.data
            if isinstance(exc.data, dict) and not message:  # GraphQL: {"errors": [...]}
                message = "; ".join(str(e.get("message")) for e in exc.data.get("errors") or []
                                    if isinstance(e, dict))[:500] or None
            return GitHubError(self._scrub(f"GitHub {what} failed: HTTP {exc.status}: "
                                           f"{message}"))
        return GitHubError(self._scrub(f"GitHub {what} failed: {type(exc).__name__}: {exc}"))

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
        raw = pr.raw_data
        head_repo = (raw.get("head") or {}).get("repo") or {}
        base_repo = (raw.get("base") or {}).get("repo") or {}
        return PullInfo(number=pr.number, head_ref=pr.head.ref, head_sha=pr.head.sha,
                        base_ref=pr.base.ref, title=pr.title, body=pr.body or "",
                        state=PrState(pr.state), merged=bool(pr.merged_at),
                        labels=tuple(label.name for label in pr.labels), url=pr.html_url,
                        author=(raw.get("user") or {}).get("login") or "",
                        head_repo=head_repo.get("full_name") or "",
                        base_repo=base_repo.get("full_name") or "",
                        mergeable_state=str(raw.get("mergeable_state") or ""))

    # -- merging by the repository's rules (GraphQL for native auto-merge) ----------------
    def _graphql(self, what: str, query: str, variables: dict[str, Any]) -> Any:
        _, data = self._call(what, self._gh.requester.graphql_query, query, variables)
        return data.get("data") or {}

    def auto_merge(self, number: int, sha: str, method: str) -> bool | None:
        """Enable GitHub's native auto-merge on the PR, pinned to ``sha``: GitHub merges it
        once every required review and check passes. Where the base requires a merge queue
        this is "merge when ready" (GitHub queues the PR; the queue sets the method), whatever
        the repository's auto-merge setting: a REST merge would be refused there. False when
        already on (or queued); None when the repository allows neither (merge through REST)."""
        from bot.adapters.github_graphql import (
            ENABLE_AUTO_MERGE,
            ENABLE_QUEUED_MERGE,
            PULL_AUTO_MERGE,
        )

        owner, name = self._repo_name.split("/", 1)
        try:
            data = self._graphql(f"reading auto-merge of #{number}", PULL_AUTO_MERGE,
                                 {"owner": owner, "name": name, "number": number})
        except GitHubError:
            return None  # no GraphQL here (an older GitHub Enterprise): merge through REST
        repo = data.get("repository") or {}
        pull = repo.get("pullRequest") or {}
        queue = bool(pull.get("isMergeQueueEnabled"))
        if not pull.get("id") or not (queue or repo.get("autoMergeAllowed")):
            return None
        if pull.get("autoMergeRequest") or pull.get("isInMergeQueue"):
            return False  # already enabled, or already queued
        if queue:
            self._graphql(f"adding #{number} to the merge queue", ENABLE_QUEUED_MERGE,
                          {"id": pull["id"], "sha": sha})
        else:
            self._graphql(f"enabling auto-merge on #{number}", ENABLE_AUTO_MERGE,
                          {"id": pull["id"], "method": method.upper(), "sha": sha})
        return True

    # -- release notes of another repository ----------------------------------------------
    def releases(self, repo: str) -> list[Release]:
        """The newest 100 releases of ``repo`` (OWNER/NAME), e.g. the lead's upstream."""
        _, rows = self._call(f"reading the releases of {repo}",
                             self._gh.requester.requestJsonAndCheck, "GET",
                             f"/repos/{repo}/releases", {"per_page": 100})
        return [Release(str(r.get("tag_name") or ""), str(r.get("name") or ""),
                        str(r.get("body") or "")) for r in rows if isinstance(r, dict)
                and not r.get("draft")]

    # -- preflight -------------------------------------------------------------------------
    def preflight(self, workflow: str) -> None:
        """Before the first write: the token works, the repository answers, and the token
        may push and dispatch. Each failure names the missing permission."""
        try:
            repo = self.repo
        except GitHubError as exc:
            raise GitHubError(f"preflight: {exc} (check the token and that it may read "
                              f"{self._repo_name}); nothing was pushed") from None
        missing = []
        perms = repo.raw_data.get("permissions")
        if isinstance(perms, dict) and not perms.get("push"):
            missing.append("contents: write (push the bot branch)")
        if isinstance(perms, dict) and not (perms.get("push") or perms.get("triage")):
            missing.append("pull-requests and issues: write (the PR, labels, the dashboard)")
        scopes = self._gh.oauth_scopes
        if scopes is not None and not {"repo", "public_repo"} & set(scopes):
            missing.append("the classic token scope `repo` (or `public_repo`)")
        from github import GithubException
        from requests import RequestException

        try:
            self.repo.get_workflow(workflow)
        except (GithubException, RequestException) as exc:
            status = getattr(exc, "status", None)
            missing.append(f"actions: read and write (workflow {workflow} could not be read"
                           f"{f': HTTP {status}' if status else ''}; it is dispatched)")
        if missing:
            raise GitHubError(f"preflight: the token lacks {'; '.join(missing)} on "
                              f"{self._repo_name}; nothing was pushed")

    # -- who we are ------------------------------------------------------------------------
    def default_branch(self) -> str:
        """The repository's default branch, as GitHub reports it."""
        return str(self.repo.default_branch)

    def identity(self) -> str:
        """The login of the token's account: GET /user for a user token; an App's or the
        workflow's installation token cannot read /user, so GraphQL's ``viewer`` then."""
        from github import GithubException
        from requests import RequestException

        requester = self._gh.requester
        try:
            _, user = requester.requestJsonAndCheck("GET", "/user")
            return str(user["login"])
        except GithubException as exc:
            if exc.status != 403:
                raise self._error("reading the authenticated user", exc) from None
        except RequestException as exc:
            raise self._error("reading the authenticated user", exc) from None
        from bot.adapters.github_graphql import VIEWER

        _, data = self._call("reading the authenticated identity (GraphQL viewer)",
                             requester.graphql_query, VIEWER, {})
        return str(data["data"]["viewer"]["login"])

    def pull_commits(self, number: int) -> list[CommitAuthor]:
        """Every commit of the PR (GitHub lists up to 250) with its git and linked identity."""
        _, rows = self._call(f"listing the commits of #{number}",
                             self._gh.requester.requestJsonAndCheck, "GET",
                             f"/repos/{self._repo_name}/pulls/{number}/commits",
                             {"per_page": 100})
        out = []
        for row in rows:
            author = (row.get("commit") or {}).get("author") or {}
            out.append(CommitAuthor(sha=row["sha"], name=author.get("name") or "",
                                    email=author.get("email") or "",
                                    login=(row.get("author") or {}).get("login"),
                                    committer_login=(row.get("committer") or {}).get("login")))
        return out

    # -- pull requests ---------------------------------------------------------------------
    def open_pulls(self, base: str, head_prefix: str) -> list[PullInfo]:
        pulls = self._call("listing pull requests",
                           lambda: list(self.repo.get_pulls(state="open", base=base)))
        return [self._pull(p) for p in pulls if p.head.ref.startswith(head_prefix)]

    def closed_pulls(self, base: str, head_prefix: str) -> list[PullInfo]:
        """Closed PRs of the bot's branches (the newest 100): a skip is read from them."""
        _, rows = self._call("listing closed pull requests",
                             self._gh.requester.requestJsonAndCheck, "GET",
                             f"/repos/{self._repo_name}/pulls",
                             {"state": "closed", "base": base, "per_page": 100,
                              "sort": "updated", "direction": "desc"})
        out = []
        for row in rows:
            ref = (row.get("head") or {}).get("ref") or ""
            if ref.startswith(head_prefix):
                out.append(PullInfo(
                    number=row["number"], head_ref=ref,
                    head_sha=(row.get("head") or {}).get("sha") or "",
                    title=row.get("title") or "", body=row.get("body") or "",
                    state=PrState(row.get("state") or PrState.CLOSED),
                    merged=bool(row.get("merged_at")),
                    labels=tuple(x.get("name", "") for x in row.get("labels") or []),
                    url=row.get("html_url") or ""))
        return out

    def comment_at(self, comment_id: int) -> tuple[int, str, str]:
        """(issue or PR number, author login, body) of one issue comment."""
        _, row = self._call(f"reading comment {comment_id}",
                            self._gh.requester.requestJsonAndCheck, "GET",
                            f"/repos/{self._repo_name}/issues/comments/{comment_id}")
        number = int(str(row.get("issue_url") or "").rstrip("/").rsplit("/", 1)[-1])
        return number, (row.get("user") or {}).get("login") or "", row.get("body") or ""

    def permission(self, login: str) -> str:
        """The repository permission of ``login`` (admin, maintain, write, triage, read,
        none), as GitHub's collaborator API reports it."""
        from urllib.parse import quote

        _, row = self._call(f"reading the permission of {login!r}",
                            self._gh.requester.requestJsonAndCheck, "GET",
                            f"/repos/{self._repo_name}/collaborators/"
                            f"{quote(login, safe='')}/permission")
        return str(row.get("role_name") or row.get("permission") or "none")

    def is_pull(self, number: int) -> bool:
        issue = self._call(f"reading #{number}", self.repo.get_issue, number)
        return issue.pull_request is not None

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
        from requests import RequestException

        for name in names:
            try:
                self.repo.get_label(name)
            except (GithubException, RequestException) as exc:
                if not isinstance(exc, GithubException) or exc.status != 404:
                    raise self._error(f"reading label {name!r}", exc) from None
                self._call(f"creating label {name!r}", self.repo.create_label, name,
                           "0e8a16", "Managed by pinbump")

    def add_labels(self, number: int, names: list[str]) -> None:
        # The object form: GitHub's OpenAPI description does not admit the bare array that
        # PyGithub's Issue.add_to_labels sends.
        self._call(f"labelling #{number}", self._gh.requester.requestJsonAndCheck, "POST",
                   f"/repos/{self._repo_name}/issues/{number}/labels",
                   input={"labels": names})

    def find_issue(self, title: str, label: str) -> IssueInfo | None:
        """The open issue with this title and label opened by a trusted account (``_trusted``):
        anyone can open an issue with the same title (and a triager label it), and its body
        (ticked boxes, ignored-version markers) must command nothing."""
        issues = self._call("listing issues", lambda: list(
            self.repo.get_issues(state="open", labels=[label])))
        for issue in issues:
            if issue.title == title and issue.pull_request is None and \
                    issue.user is not None and self._trusted(issue.user.login):
                return IssueInfo(issue.number, issue.title, issue.body or "", issue.html_url)
        return None

    def _trusted(self, login: str) -> bool:
        """An issue author whose issue may be the bot's: the token's own account, the
        repository's workflow token (a dashboard made with ``github.token``, read with a PAT,
        or the reverse), or anyone with write access (who could edit the real one anyway)."""
        self._me = self._me or self.identity()
        if login in (self._me, "github-actions[bot]"):
            return True
        try:
            return self.permission(login) in WRITE_ROLES
        except GitHubError:  # not a collaborator (404), or unreadable: not trusted
            return False

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
                state = CheckState.PENDING
            elif run.get("conclusion") in ("success", "neutral", "skipped"):
                state = CheckState.SUCCESS
            else:
                state = CheckState.FAILURE
            out.append(Check(run["name"], state, run.get("html_url") or "", sha))
        for status in combined.get("statuses", []):
            state = {"success": CheckState.SUCCESS, "pending": CheckState.PENDING}.get(
                status["state"], CheckState.FAILURE)
            out.append(Check(status["context"], state, status.get("target_url") or "", sha))
        return out

    def set_status(self, sha: str, context: str, state: StatusState, target_url: str = "",
                   description: str = "") -> None:
        body = {"state": state, "context": context, "description": description[:140]}
        if target_url:
            body["target_url"] = target_url
        self._call(f"setting status {context} on {sha[:12]}",
                   self._gh.requester.requestJsonAndCheck, "POST",
                   f"/repos/{self._repo_name}/statuses/{sha}", input=body)


class GitHubPort(Protocol):
    """What the commands ask of GitHub: the real client, or the dry run's recorder."""

    def open_pulls(self, base: str, head_prefix: str) -> list[PullInfo]: ...
    def pull(self, number: int) -> PullInfo: ...
    def create_pull(self, *, title: str, body: str, head: str, base: str) -> PullInfo: ...
    def edit_pull(self, number: int, **fields: Any) -> None: ...
    def merge(self, number: int, sha: str, method: str, title: str) -> None: ...
    def request_reviewers(self, number: int, reviewers: list[str]) -> None: ...
    def comments(self, number: int) -> list[str]: ...
    def comment(self, number: int, body: str) -> None: ...
    def ensure_labels(self, names: list[str]) -> None: ...
    def add_labels(self, number: int, names: list[str]) -> None: ...
    def find_issue(self, title: str, label: str) -> IssueInfo | None: ...
    def create_issue(self, title: str, body: str, labels: list[str]) -> IssueInfo: ...
    def edit_issue(self, number: int, body: str) -> None: ...
    def dispatch(self, workflow: str, ref: str, inputs: dict[str, str]) -> None: ...
    def preflight(self, workflow: str) -> None: ...
    def releases(self, repo: str) -> list[Release]: ...
    def auto_merge(self, number: int, sha: str, method: str) -> bool | None: ...
    def closed_pulls(self, base: str, head_prefix: str) -> list[PullInfo]: ...
    def checks(self, sha: str) -> list[Check]: ...
    def set_status(self, sha: str, context: str, state: StatusState, target_url: str = "",
                   description: str = "") -> None: ...


@dataclass
class RecordingGitHub:
    """The dry run's GitHub: it is never contacted (a dry run needs no token); reads find
    nothing, writes are recorded in ``calls`` and answered with placeholders."""

    calls: list[tuple[str, tuple[Any, ...]]] = field(default_factory=list)
    _pulls: dict[int, PullInfo] = field(default_factory=dict)

    def _record(self, name: str, *args: Any) -> None:
        self.calls.append((name, args))

    def open_pulls(self, base: str, head_prefix: str) -> list[PullInfo]:
        return []

    def pull(self, number: int) -> PullInfo:
        return self._pulls[number]

    def create_pull(self, *, title: str, body: str, head: str, base: str) -> PullInfo:
        self._record("create_pull", title, head, base)
        number = len(self._pulls) + 1
        pr = PullInfo(number, head, "", title, body, PrState.OPEN, False, (),
                      f"a new PR for {head} (dry run)")
        self._pulls[number] = pr
        return pr

    def edit_pull(self, number: int, **fields: Any) -> None:
        self._record("edit_pull", number, fields)

    def merge(self, number: int, sha: str, method: str, title: str) -> None:
        self._record("merge", number, sha, method)

    def request_reviewers(self, number: int, reviewers: list[str]) -> None:
        self._record("request_reviewers", number, tuple(reviewers))

    def comments(self, number: int) -> list[str]:
        return []

    def comment(self, number: int, body: str) -> None:
        self._record("comment", number)

    def ensure_labels(self, names: list[str]) -> None:
        self._record("ensure_labels", tuple(names))

    def add_labels(self, number: int, names: list[str]) -> None:
        self._record("add_labels", number, tuple(names))

    def find_issue(self, title: str, label: str) -> IssueInfo | None:
        return None

    def create_issue(self, title: str, body: str, labels: list[str]) -> IssueInfo:
        self._record("create_issue", title)
        return IssueInfo(0, title, body, "the dashboard issue (dry run)")

    def edit_issue(self, number: int, body: str) -> None:
        self._record("edit_issue", number)

    def preflight(self, workflow: str) -> None:
        pass

    def releases(self, repo: str) -> list[Release]:
        return []

    def auto_merge(self, number: int, sha: str, method: str) -> bool | None:
        self._record("auto_merge", number, sha, method)
        return None

    def closed_pulls(self, base: str, head_prefix: str) -> list[PullInfo]:
        return []

    def dispatch(self, workflow: str, ref: str, inputs: dict[str, str]) -> None:
        self._record("dispatch", workflow, ref, tuple(sorted(inputs.items())))

    def checks(self, sha: str) -> list[Check]:
        return []

    def set_status(self, sha: str, context: str, state: StatusState, target_url: str = "",
                   description: str = "") -> None:
        self._record("set_status", sha, context, state)
