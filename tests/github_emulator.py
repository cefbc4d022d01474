"""A local GitHub REST emulator for the tests: loopback only, stateful, held to GitHub's
OpenAPI description (tests/openapi/github-subset.json, extracted from @octokit/openapi).

Every response object is built from the schema's required fields and overlaid with the state;
every request the client sends and every response returned is validated with openapi-core,
and any mismatch is recorded in ``violations`` (the tests assert there are none). Branch heads
come from a real bare git repository: the remote the bot pushes to.
"""

from __future__ import annotations

import functools
import itertools
import json
import re
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

from graphql import GraphQLSchema, build_schema, graphql_sync, parse, validate
from openapi_core import OpenAPI
from openapi_core.testing import MockRequest, MockResponse

SPEC_PATH = Path(__file__).parent / "openapi" / "github-subset.json"
GRAPHQL_PATH = Path(__file__).parent / "graphql" / "github-subset.graphql"
BOT = "pinbump-bot"
API = "https://api.github.com"


@functools.cache
def _descriptions() -> tuple[dict[str, Any], OpenAPI, GraphQLSchema]:
    """GitHub's OpenAPI description (checked once: ~0.4 s) and GraphQL schema, read-only and
    shared by every emulator of the session."""
    spec = json.loads(SPEC_PATH.read_text())
    return spec, OpenAPI.from_dict(spec), build_schema(GRAPHQL_PATH.read_text())


def now() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


class SchemaFactory:
    """Instances of OpenAPI schemas with every required field, for overlaying with state."""

    def __init__(self, spec: dict[str, Any]) -> None:
        self.spec = spec

    def resolve(self, node: dict[str, Any]) -> dict[str, Any]:
        while "$ref" in node:
            _, _, kind, name = node["$ref"].split("/", 3)
            node = self.spec["components"][kind][name]
        return node

    def make(self, schema: dict[str, Any], depth: int = 0) -> Any:
        schema = self.resolve(schema)
        if "allOf" in schema:
            return self._all_of(schema["allOf"], depth)
        for key in ("oneOf", "anyOf"):
            if key in schema:
                return self.make(schema[key][0], depth)
        if schema.get("nullable") and depth > 6:
            return None
        if "enum" in schema:
            return schema["enum"][0]
        kind = schema.get("type")
        if kind == "object" or "properties" in schema:
            props = schema.get("properties", {})
            return {name: self.make(props.get(name, {"type": "string"}), depth + 1)
                    for name in schema.get("required", [])}
        return _scalar(kind, schema.get("format", ""))

    def _all_of(self, parts: list[dict[str, Any]], depth: int) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for part in parts:
            value = self.make(part, depth)
            if isinstance(value, dict):
                out.update(value)
        return out

    def component(self, schema_name: str, /, **overlay: Any) -> Any:
        return deep_merge(self.make({"$ref": f"#/components/schemas/{schema_name}"}), overlay)


# An instance of each non-object type (a fresh one per call); a string by its format.
_SCALARS: dict[str, Callable[[], Any]] = {"array": list, "integer": lambda: 1,
                                          "number": lambda: 1.0, "boolean": lambda: False}


def _scalar(kind: Any, fmt: str) -> Any:
    if kind == "string":
        return {"date-time": now(), "uri": f"{API}/x", "email": "bot@example.invalid",
                "uri-template": f"{API}/x{{/y}}"}.get(fmt, "x")
    maker = _SCALARS.get(kind) if isinstance(kind, str) else None
    return maker() if maker is not None else None


def deep_merge(base: Any, overlay: Any) -> Any:
    if isinstance(base, dict) and isinstance(overlay, dict):
        out = dict(base)
        for key, value in overlay.items():
            out[key] = deep_merge(base.get(key), value) if key in base else value
        return out
    return overlay


@dataclass
class Fault:
    pattern: str  # regex on "METHOD /path"
    status: int
    times: int
    headers: dict[str, str] = field(default_factory=dict)
    body: dict[str, Any] = field(default_factory=dict)
    reset_in: float | None = None  # primary rate limit: X-RateLimit-Reset this far ahead


@dataclass
class Account:
    login: str
    installation: bool = False  # an App's or the workflow's token: GET /user is refused
    permission: str = "write"  # admin | maintain | write | triage | read | none


@dataclass
class State:
    owner: str
    name: str
    bare: Path
    default_branch: str = "main"
    items: dict[int, dict[str, Any]] = field(default_factory=dict)  # issues and PRs
    comments: dict[int, list[dict[str, Any]]] = field(default_factory=dict)
    labels: dict[str, dict[str, Any]] = field(default_factory=dict)
    check_runs: list[dict[str, Any]] = field(default_factory=list)
    statuses: list[dict[str, Any]] = field(default_factory=list)
    dispatches: list[dict[str, Any]] = field(default_factory=list)
    merges: list[dict[str, Any]] = field(default_factory=list)
    workflows: dict[str, int] = field(default_factory=dict)  # file name -> id
    auto_merge_allowed: bool = False
    releases: dict[str, list[dict[str, Any]]] = field(default_factory=dict)  # OWNER/NAME
    required_approvals: int = 0  # branch protection of the base: approving reviews needed
    merge_queue: bool = False  # the base's protection (or ruleset) requires a merge queue
    queue: list[dict[str, Any]] = field(default_factory=list)  # its entries
    counter: itertools.count = field(default_factory=lambda: itertools.count(1))
    ids: itertools.count = field(default_factory=lambda: itertools.count(1000))


class GitHubEmulator(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, owner: str, name: str, bare: Path, token: str) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.spec_json, self.openapi, self.gql_schema = _descriptions()
        self.factory = SchemaFactory(self.spec_json)
        self.state = State(owner, name, bare)
        self.token = token
        self.accounts: dict[str, Account] = {token: Account(BOT)}
        self.emails: dict[str, str] = {}  # commit email -> linked login
        self.gql_log: list[dict[str, Any]] = []
        self.lock = threading.RLock()
        self.violations: list[str] = []
        self.log: list[tuple[str, str, int]] = []  # method, path, status
        self.stamps: list[float] = []  # when each logged request was answered
        self.faults: list[Fault] = []
        self.request_headers: list[dict[str, str]] = []
        self.caller = Account(BOT)
        self.app: EmulatedApp | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"

    # -- helpers for tests -----------------------------------------------------------------
    def inject(self, pattern: str, status: int, times: int = 1, **kw: Any) -> None:
        self.faults.append(Fault(pattern, status, times, **kw))

    def add_account(self, token: str, login: str, *, installation: bool = False,
                    permission: str = "write", emails: tuple[str, ...] = ()) -> None:
        self.accounts[token] = Account(login, installation, permission)
        for email in emails:
            self.emails[email] = login

    def writes(self) -> list[tuple[str, str, int]]:
        return [entry for entry in self.log if entry[0] != "GET"]

    def head_sha(self, branch: str) -> str | None:
        proc = subprocess.run(["git", "--git-dir", str(self.state.bare), "rev-parse", "--verify",
                               "--quiet", f"refs/heads/{branch}"], capture_output=True,
                              text=True)
        return proc.stdout.strip() or None

    # -- objects ---------------------------------------------------------------------------
    def user(self, login: str = BOT) -> dict[str, Any]:
        return self.factory.component("simple-user", login=login, id=7, type="Bot",
                                      html_url=f"https://github.com/{login}")

    def repo_obj(self) -> dict[str, Any]:
        s = self.state
        return self.factory.component(
            "full-repository", id=1, name=s.name, full_name=f"{s.owner}/{s.name}",
            owner=self.user(s.owner), private=False, default_branch=s.default_branch,
            url=f"{self.url}/repos/{s.owner}/{s.name}",
            html_url=f"https://github.com/{s.owner}/{s.name}",
            permissions=self.permissions(self.caller.permission))

    @staticmethod
    def permissions(role: str) -> dict[str, bool]:
        ladder = ["read", "triage", "write", "maintain", "admin"]
        rank = ladder.index(role) if role in ladder else -1
        return {"pull": rank >= 0, "triage": rank >= 1, "push": rank >= 2,
                "maintain": rank >= 3, "admin": rank >= 4}

    def label_obj(self, name: str) -> dict[str, Any]:
        return self.state.labels[name]

    def item_obj(self, number: int, simple: bool = False, as_issue: bool = False
                 ) -> dict[str, Any]:
        item = self.state.items[number]
        s = self.state
        base_url = f"{self.url}/repos/{s.owner}/{s.name}"
        common = dict(
            id=item["id"], number=number, title=item["title"], body=item["body"],
            state=item["state"], user=self.user(item.get("author", BOT)), labels=[self.label_obj(n)
                                                           for n in item["labels"]],
            html_url=f"https://github.com/{s.owner}/{s.name}/"
                     f"{'pull' if item['pr'] else 'issues'}/{number}",
            created_at=item["created"], updated_at=item["updated"],
            closed_at=item.get("closed_at"), locked=False, comments=len(s.comments.get(
                number, [])), author_association="NONE")
        if not item["pr"] or as_issue:
            extra_issue = {"pull_request": {
                "url": f"{base_url}/pulls/{number}", "html_url": common["html_url"],
                "diff_url": common["html_url"] + ".diff",
                "patch_url": common["html_url"] + ".patch"}} if item["pr"] else {}
            return self.factory.component("issue", url=f"{base_url}/issues/{number}",
                                          repository_url=base_url, **common, **extra_issue)
        sha = self.head_sha(item["head"]) or item.get("head_sha") or "0" * 40
        ref = {"repo": self.repo_obj(), "user": self.user(s.owner)}
        head = {"ref": item["head"], "sha": sha, "label": f"{s.owner}:{item['head']}", **ref}
        base = {"ref": item["base"], "sha": self.head_sha(item["base"]) or "0" * 40,
                "label": f"{s.owner}:{item['base']}", **ref}
        extra: dict[str, Any] = {"head": head, "base": base, "url": f"{base_url}/pulls/{number}",
                                 "merged_at": item.get("merged_at"),
                                 "merge_commit_sha": item.get("merge_sha"), "draft": False,
                                 "requested_reviewers": [self.user(r) for r in
                                                         item.get("reviewers", [])]}
        if not simple:
            mergeable, state = self.merge_state(number)
            extra.update(merged=bool(item.get("merged_at")), mergeable=mergeable,
                         mergeable_state=state, merged_by=None, comments=0,
                         review_comments=0, commits=1, additions=1, deletions=1,
                         changed_files=1, maintainer_can_modify=False)
        return self.factory.component("pull-request-simple" if simple else "pull-request",
                                      **{**common, **extra})

    def _git(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(["git", "--git-dir", str(self.state.bare), *args],
                              capture_output=True, text=True)

    def merge_state(self, number: int) -> tuple[bool, str]:
        """GitHub's mergeable and mergeable_state, computed with real git: dirty on a
        conflict, behind when the base moved on, blocked while branch protection wants an
        approving review, else clean."""
        item = self.state.items[number]
        head, base = self.head_sha(item["head"]), self.head_sha(item["base"])
        if item.get("merged_at") or not head or not base:
            return True, "unknown"
        if self._git("merge-tree", "--write-tree", base, head).returncode != 0:
            return False, "dirty"
        if self._git("merge-base", "--is-ancestor", base, head).returncode != 0:
            return True, "behind"
        approvals = {r["user"] for r in item.get("reviews", []) if r["state"] == "APPROVED"
                     and r["commit_id"] == head}
        if len(approvals) < self.state.required_approvals:
            return True, "blocked"
        return True, "clean"

    def pull_node(self, number: int) -> dict[str, Any]:
        item = self.state.items[number]
        auto = item.get("auto_merge")
        return {"id": f"PR_{item['id']}", "number": number,
                "autoMergeRequest": {"enabledAt": auto["enabled_at"]} if auto else None,
                "isMergeQueueEnabled": self.state.merge_queue,
                "isInMergeQueue": any(e["number"] == number for e in self.state.queue)}

    def enable_auto_merge(self, args: dict[str, Any]) -> dict[str, Any]:
        """GitHub's enablePullRequestAutoMerge. On a base that requires a merge queue it is
        "merge when ready" whatever the repository's auto-merge setting: a PR whose
        requirements already hold joins the queue at once, the others when they come to
        hold (cli/cli pkg/cmd/pr/merge/merge.go documents the same)."""
        s = self.state
        number = next(n for n, i in s.items.items() if f"PR_{i['id']}" == args["pullRequestId"])
        item = s.items[number]
        head = self.head_sha(item["head"])
        if args.get("expectedHeadOid") and args["expectedHeadOid"] != head:
            raise ValueError("Head sha didn't match expected head sha")
        if not (s.auto_merge_allowed or s.merge_queue):
            raise ValueError("Pull request Auto merge is not allowed for this repository")
        if s.merge_queue and self.merge_state(number) == (True, "clean"):
            s.queue.append({"number": number, "sha": head, "enqueued_at": now()})
        else:
            item["auto_merge"] = {"enabled_at": now(), "method": args.get("mergeMethod"),
                                  "sha": args.get("expectedHeadOid")}
        return {"pullRequest": self.pull_node(number)}

    def new_item(self, pr: bool, **fields: Any) -> int:
        number = next(self.state.counter)
        self.state.items[number] = {"id": next(self.state.ids), "pr": pr, "state": "open",
                                    "labels": [], "created": now(), "updated": now(),
                                    "body": None, "author": self.caller.login, **fields}
        return number


@dataclass
class EmulatedApp:
    """A GitHub App installed on the emulated repository: a JWT signed with its private key
    (RS256, ``iss`` = the App id) is exchanged for an installation token."""

    app_id: str
    public_key_pem: str
    login: str = "pinbump-app[bot]"
    installation_id: int = 77
    tokens: list[str] = field(default_factory=list)
    permissions: dict[str, str] = field(default_factory=lambda: {
        "contents": "write", "pull_requests": "write", "issues": "write", "actions": "write",
        "statuses": "write", "checks": "read", "metadata": "read"})

    def route(self, srv: GitHubEmulator, method: str, path: str, jwt_text: str
              ) -> tuple[int, Any, dict[str, str]]:
        import jwt

        try:
            claims = jwt.decode(jwt_text, self.public_key_pem, algorithms=["RS256"])
        except jwt.PyJWTError as exc:
            return 401, {"message": f"A JSON web token could not be decoded ({exc})",
                         "documentation_url": "https://docs.github.com/rest"}, {}
        if str(claims.get("iss")) != self.app_id:
            return 401, {"message": "'Issuer' claim ('iss') must be an Integer"}, {}
        s = srv.state
        if (method, path) == ("GET", f"/repos/{s.owner}/{s.name}/installation"):
            return 200, srv.factory.component(
                "installation", id=self.installation_id, app_id=int(self.app_id),
                app_slug="pinbump-app", target_type="Organization", account=srv.user(s.owner),
                access_tokens_url=f"{srv.url}/app/installations/{self.installation_id}/"
                                  "access_tokens",
                html_url="https://github.com/settings/installations/77",
                repositories_url=f"{srv.url}/installation/repositories",
                created_at=now(), updated_at=now(), suspended_by=None, suspended_at=None,
                single_file_name=None), {}
        if (method, path) == ("POST", f"/app/installations/{self.installation_id}/"
                                      "access_tokens"):
            token = f"ghs_installation_{len(self.tokens)}_0123456789abcdef"
            self.tokens.append(token)
            srv.accounts[token] = Account(self.login, installation=True)
            return 201, srv.factory.component("installation-token", token=token,
                                              expires_at=now(),
                                              permissions=dict(self.permissions)), {}
        return 403, {"message": "A JWT can only call the App endpoints",
                     "documentation_url": "https://docs.github.com/rest"}, {}


class _Handler(BaseHTTPRequestHandler):
    server: GitHubEmulator
    protocol_version = "HTTP/1.1"
    # The head and the body go out in two writes on a kept-alive connection: without
    # TCP_NODELAY (as api.github.com sets), Nagle holds the body until the client's delayed
    # ACK, ~40 ms an answer.
    disable_nagle_algorithm = True

    def log_message(self, *args: object) -> None:
        pass

    def _body(self) -> bytes:
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length else b""

    def _dispatch(self, method: str) -> None:
        srv = self.server
        raw = self._body()
        parts = urlsplit(self.path)
        path, query = unquote(parts.path), parse_qs(parts.query)
        with srv.lock:
            srv.request_headers.append(dict(self.headers.items()))
            try:
                status, payload, headers = self._route(method, path, query, raw)
            except Exception as exc:
                srv.violations.append(f"emulator crashed on {method} {path}: {exc!r}")
                status, payload, headers = 500, {"message": "emulator error"}, {}
            srv.log.append((method, path, status))
            srv.stamps.append(time.monotonic())
        if status == 0:  # an injected dropped connection: no answer at all
            self.close_connection = True
            return
        body = b"" if payload is None else json.dumps(payload).encode()
        self._validate(method, path, parts.query, raw, status, body)
        self.send_response(status)
        self.send_header("Content-Type", "application/json; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        defaults = {"X-RateLimit-Limit": "5000", "X-RateLimit-Remaining": "4999",
                    "X-RateLimit-Reset": "4102444800"}
        for key, value in {**defaults, **headers}.items():
            self.send_header(key, value)
        self.end_headers()
        self.wfile.write(body)

    do_GET = lambda self: self._dispatch("GET")  # noqa: E731
    do_POST = lambda self: self._dispatch("POST")  # noqa: E731
    do_PATCH = lambda self: self._dispatch("PATCH")  # noqa: E731
    do_PUT = lambda self: self._dispatch("PUT")  # noqa: E731
    do_DELETE = lambda self: self._dispatch("DELETE")  # noqa: E731

    def _validate(self, method: str, path: str, query: str, raw: bytes, status: int,
                  body: bytes) -> None:
        srv = self.server
        if path == "/graphql":
            return  # held to GitHub's GraphQL schema by graphql-core instead (see graphql())
        ctype = "application/json" if raw else None
        req = MockRequest(API, method.lower(), path, args=parse_qs(query),
                          data=raw or None, headers={k: v for k, v in self.headers.items()},
                          content_type=ctype)
        try:
            srv.openapi.validate_request(req)
        except Exception as exc:
            srv.violations.append(f"request {method} {path}: {exc}"[:2000])
        if status >= 400 and status not in (404, 409, 422):
            return  # injected faults (401/403/5xx) are not part of the contract we check
        resp = MockResponse(body, status_code=status, content_type="application/json",
                            headers={"Link": ""} if status == 200 else {})
        try:
            srv.openapi.validate_response(req, resp)
        except Exception as exc:
            srv.violations.append(f"response {status} {method} {path}: {exc}"[:2000])

    def _route(self, method: str, path: str, query: dict[str, list[str]], raw: bytes
               ) -> tuple[int, Any, dict[str, str]]:
        srv, s = self.server, self.server.state
        key = f"{method} {path}"
        for fault in srv.faults:
            if fault.times > 0 and re.search(fault.pattern, key):
                fault.times -= 1
                headers = dict(fault.headers)
                if fault.reset_in is not None:
                    headers.update({"X-RateLimit-Remaining": "0",
                                    "X-RateLimit-Reset": str(int(time.time() + fault.reset_in))})
                return fault.status, fault.body or {"message": "injected"}, headers
        auth = self.headers.get("Authorization", "")
        scheme, _, token = auth.partition(" ")
        account = srv.accounts.get(token) if scheme in ("token", "Bearer") else None
        if account is None and scheme == "Bearer" and srv.app is not None:
            return srv.app.route(srv, method, path, token)
        if account is None:
            return 401, {"message": "Bad credentials",
                         "documentation_url": "https://docs.github.com/rest"}, {}
        srv.caller = account
        data = json.loads(raw) if raw else {}
        for pattern, verb, handler in TOP_ROUTES:
            m = re.fullmatch(pattern, path)
            if m and verb == method:
                return handler(srv, m, query, data)
        prefix = f"/repos/{s.owner}/{s.name}"
        if not path.startswith(prefix):
            return 404, {"message": "Not Found"}, {}
        rest = path[len(prefix):]
        for pattern, verb, handler in ROUTES:
            m = re.fullmatch(pattern, rest)
            if m and verb == method:
                return handler(srv, m, query, data)
        return 404, {"message": "Not Found"}, {}


def _why(exc: BaseException) -> str:
    """The schema errors behind an openapi-core exception, with their JSON paths."""
    reasons = []
    seen: set[int] = set()
    todo: list[BaseException | None] = [exc]
    while todo:
        cur = todo.pop()
        if cur is None or id(cur) in seen:
            continue
        seen.add(id(cur))
        for err in getattr(cur, "schema_errors", None) or []:
            stack = [err]
            while stack:
                e = stack.pop()
                if e.context:
                    stack.extend(e.context)
                else:
                    where = "/".join(str(x) for x in e.absolute_path)
                    reasons.append(f"{where or '<root>'}: {e.message[:200]}")
        todo += [cur.__cause__, cur.__context__]
    return "; ".join(sorted(set(reasons))[:10]) or f"{type(exc).__name__}: {str(exc)[:300]}"


# -- route handlers ----------------------------------------------------------------------------
Handler = Callable[[GitHubEmulator, re.Match[str], dict[str, list[str]], Any],
                   tuple[int, Any, dict[str, str]]]


def get_repo(srv, m, q, d):
    return 200, srv.repo_obj(), {}


def list_pulls(srv, m, q, d):
    state = q.get("state", ["open"])[0]
    head = q.get("head", [None])[0]
    base = q.get("base", [None])[0]
    out = []
    for n, item in sorted(srv.state.items.items()):
        if not item["pr"] or (state != "all" and item["state"] != state):
            continue
        if head and f"{srv.state.owner}:{item['head']}" != head:
            continue
        if base and item["base"] != base:
            continue
        out.append(srv.item_obj(n, simple=True))
    return 200, out, {}


def create_pull(srv, m, q, d):
    if srv.head_sha(d["head"]) is None:
        return 422, {"message": "Validation Failed", "errors": [
            {"resource": "PullRequest", "field": "head", "code": "invalid"}]}, {}
    n = srv.new_item(True, title=d["title"], body=d.get("body"), head=d["head"],
                     base=d["base"])
    return 201, srv.item_obj(n), {"Location": f"{srv.url}/pulls/{n}"}


def _item(srv, m, pr: bool | None):
    n = int(m.group(1))
    item = srv.state.items.get(n)
    if item is None or (pr is not None and item["pr"] != pr):
        return None
    return n


def get_pull(srv, m, q, d):
    n = _item(srv, m, True)
    return (200, srv.item_obj(n), {}) if n else (404, {"message": "Not Found"}, {})


def update_item(srv, m, q, d):
    n = _item(srv, m, None)
    as_issue = "/issues/" in m.string
    if n is None:
        return 404, {"message": "Not Found"}, {}
    item = srv.state.items[n]
    for k in ("title", "body", "state"):
        if k in d:
            item[k] = d[k]
    if d.get("state") == "closed":
        item["closed_at"] = now()
    item["updated"] = now()
    return 200, srv.item_obj(n, as_issue=as_issue), {}


def get_issue(srv, m, q, d):
    n = _item(srv, m, None)
    return (200, srv.item_obj(n, as_issue=True), {}) if n else (404, {"message": "Not Found"},
                                                                 {})


def merge_pull(srv, m, q, d):
    n = _item(srv, m, True)
    if n is None:
        return 404, {"message": "Not Found"}, {}
    item = srv.state.items[n]
    head = srv.head_sha(item["head"])
    mergeable, state = srv.merge_state(n)
    # A base that requires a merge queue: GitHub answers a REST merge with 405 "Changes
    # must be made through the merge queue" (pascalgn/automerge-action#235; only a token
    # that may bypass the rule merges directly, akuity/kargo#5405).
    if srv.state.merge_queue:
        return 405, {"message": "Changes must be made through the merge queue",
                     "documentation_url": "https://docs.github.com/rest/pulls/pulls"
                                          "#merge-a-pull-request"}, {}
    if not mergeable or state == "blocked":
        return 405, {"message": "Pull Request is not mergeable",
                     "documentation_url": "https://docs.github.com/rest"}, {}
    if d.get("sha") and d["sha"] != head:
        return 409, {"message": "Head branch was modified. Review and try the merge again.",
                     "documentation_url": "https://docs.github.com/rest"}, {}
    item.update(state="closed", merged_at=now(), closed_at=now(), merge_sha="f" * 40)
    srv.state.merges.append({"number": n, "sha": head, "method": d.get("merge_method")})
    return 200, {"sha": "f" * 40, "merged": True, "message": "Pull Request successfully merged"}, {}


def request_reviewers(srv, m, q, d):
    n = _item(srv, m, True)
    srv.state.items[n].setdefault("reviewers", []).extend(d.get("reviewers", []))
    return 201, srv.item_obj(n, simple=True), {}


def list_issues(srv, m, q, d):
    state = q.get("state", ["open"])[0]
    labels = [x for x in q.get("labels", [""])[0].split(",") if x]
    out = [srv.item_obj(n, as_issue=True) for n, item in sorted(srv.state.items.items())
           if (state == "all" or item["state"] == state)
           and all(label in item["labels"] for label in labels)]
    return 200, out, {}


def create_issue(srv, m, q, d):
    for name in d.get("labels", []):
        _ensure_label(srv, name)
    n = srv.new_item(False, title=d["title"], body=d.get("body"),
                     labels=list(d.get("labels", [])))
    return 201, srv.item_obj(n), {}


def list_comments(srv, m, q, d):
    return 200, srv.state.comments.get(int(m.group(1)), []), {}


def create_comment(srv, m, q, d):
    n = int(m.group(1))
    if n not in srv.state.items:
        return 404, {"message": "Not Found"}, {}
    s = srv.state
    comment = srv.factory.component(
        "issue-comment", id=next(s.ids), body=d["body"], user=srv.user(srv.caller.login),
        author_association="COLLABORATOR" if srv.caller.permission in ("admin", "maintain",
                                                                        "write") else "NONE",
        url=f"{srv.url}/repos/{s.owner}/{s.name}/issues/comments/1",
        html_url=f"https://github.com/{s.owner}/{s.name}/issues/{n}#issuecomment",
        issue_url=f"{srv.url}/repos/{s.owner}/{s.name}/issues/{n}")
    s.comments.setdefault(n, []).append(comment)
    return 201, comment, {}


def _ensure_label(srv, name: str) -> dict[str, Any]:
    s = srv.state
    if name not in s.labels:
        s.labels[name] = srv.factory.component(
            "label", id=next(s.ids), name=name, color="ededed", description=None,
            default=False, url=f"{srv.url}/repos/{s.owner}/{s.name}/labels/{name}")
    return s.labels[name]


def add_labels(srv, m, q, d):
    n = int(m.group(1))
    names = d.get("labels", []) if isinstance(d, dict) else d
    for name in names:
        _ensure_label(srv, name)
        if name not in srv.state.items[n]["labels"]:
            srv.state.items[n]["labels"].append(name)
    return 200, [srv.label_obj(x) for x in srv.state.items[n]["labels"]], {}


def get_label(srv, m, q, d):
    name = m.group(1)
    if name not in srv.state.labels:
        return 404, {"message": "Not Found"}, {}
    return 200, srv.label_obj(name), {}


def create_label(srv, m, q, d):
    if d["name"] in srv.state.labels:
        return 422, {"message": "Validation Failed"}, {}
    label = _ensure_label(srv, d["name"])
    label.update(color=d.get("color", "ededed"), description=d.get("description"))
    return 201, label, {}


def get_workflow(srv, m, q, d):
    s = srv.state
    wid = m.group(1)
    number = s.workflows.setdefault(wid, 42 + len(s.workflows))
    return 200, srv.factory.component(
        "workflow", id=number, name=wid, path=f".github/workflows/{wid}", state="active",
        url=f"{srv.url}/repos/{s.owner}/{s.name}/actions/workflows/{number}",
        html_url=f"https://github.com/{s.owner}/{s.name}/actions/workflows/{wid}",
        badge_url=f"https://github.com/{s.owner}/{s.name}/workflows/{wid}/badge.svg"), {}


def dispatch(srv, m, q, d):
    names = {str(i): n for n, i in srv.state.workflows.items()}
    srv.state.dispatches.append({"workflow": names.get(m.group(1), m.group(1)), "ref": d["ref"],
                                 "inputs": d.get("inputs", {})})
    return 204, None, {}


def check_runs(srv, m, q, d):
    ref = m.group(1)
    runs = [r for r in srv.state.check_runs if r["head_sha"] == ref]
    return 200, {"total_count": len(runs), "check_runs": runs}, {}


def create_check_run(srv, m, q, d):
    s = srv.state
    run = srv.factory.component(
        "check-run", id=next(s.ids), name=d["name"], head_sha=d["head_sha"],
        status=d.get("status", "queued"), conclusion=d.get("conclusion"),
        details_url=d.get("details_url"), url=f"{srv.url}/repos/{s.owner}/{s.name}/check-runs/1",
        html_url=f"https://github.com/{s.owner}/{s.name}/runs/1", started_at=now(),
        completed_at=now() if d.get("conclusion") else None, external_id=None,
        pull_requests=[])
    s.check_runs.append(run)
    return 201, run, {}


def combined_status(srv, m, q, d):
    ref = m.group(1)
    s = srv.state
    latest: dict[str, dict[str, Any]] = {}
    for st in s.statuses:
        if st["sha"] == ref:
            latest[st["context"]] = st["obj"]
    simple = [srv.factory.component(
        "simple-commit-status", id=x["id"], state=x["state"], context=x["context"],
        description=x["description"], target_url=x["target_url"], url=x["url"],
        avatar_url=None, created_at=now(), updated_at=now()) for x in latest.values()]
    states = [x["state"] for x in latest.values()]
    state = ("failure" if any(x in ("failure", "error") for x in states) else
             "pending" if not states or any(x == "pending" for x in states) else "success")
    repo = srv.factory.component(
        "minimal-repository", id=1, name=s.name, full_name=f"{s.owner}/{s.name}",
        owner=srv.user(s.owner), private=False,
        url=f"{srv.url}/repos/{s.owner}/{s.name}",
        html_url=f"https://github.com/{s.owner}/{s.name}")
    return 200, srv.factory.component(
        "combined-commit-status", state=state, sha=ref, total_count=len(latest),
        statuses=simple, repository=repo,
        commit_url=f"{srv.url}/repos/{s.owner}/{s.name}/commits/{ref}",
        url=f"{srv.url}/repos/{s.owner}/{s.name}/commits/{ref}/status"), {}


def create_status(srv, m, q, d):
    s = srv.state
    obj = srv.factory.component(
        "status", id=next(s.ids), state=d["state"], context=d.get("context", "default"),
        description=d.get("description"), target_url=d.get("target_url"),
        creator=srv.user(), url=f"{srv.url}/repos/{s.owner}/{s.name}/statuses/{m.group(1)}",
        avatar_url=None, created_at=now(), updated_at=now())
    s.statuses.append({"sha": m.group(1), "context": obj["context"], "obj": obj})
    return 201, obj, {}


def get_comment(srv, m, q, d):
    cid = int(m.group(1))
    for comments in srv.state.comments.values():
        for c in comments:
            if c["id"] == cid:
                return 200, c, {}
    return 404, {"message": "Not Found"}, {}


def collaborator_permission(srv, m, q, d):
    login = m.group(1)
    role = next((a.permission for a in srv.accounts.values() if a.login == login), "none")
    legacy = {"maintain": "write", "triage": "read"}.get(role, role)
    obj = srv.factory.component("repository-collaborator-permission", permission=legacy,
                                role_name=role)
    obj["user"] = None
    return 200, obj, {}


def get_user(srv, m, q, d):
    me = srv.caller
    if me.installation:
        return 403, {"message": "Resource not accessible by integration",
                     "documentation_url": "https://docs.github.com/rest/users/users"
                                          "#get-the-authenticated-user"}, {}
    return 200, srv.factory.component(
        "public-user", login=me.login, id=7, type="User", user_view_type="public",
        html_url=f"https://github.com/{me.login}", created_at=now(), updated_at=now()), {}


def pull_commits(srv, m, q, d):
    n = _item(srv, m, True)
    if n is None:
        return 404, {"message": "Not Found"}, {}
    item = srv.state.items[n]
    head = srv.head_sha(item["head"]) or item.get("head_sha")
    base = srv.head_sha(item["base"])
    proc = subprocess.run(["git", "--git-dir", str(srv.state.bare), "log", "--reverse",
                           "--format=%H%x00%an%x00%ae%x00%cn%x00%ce%x00%T%x00%s",
                           f"{base}..{head}"], capture_output=True, text=True, check=True)
    s = srv.state
    out = []
    for line in proc.stdout.splitlines():
        sha, an, ae, cn, ce, tree, subject = line.split("\0")
        # An email linked to no account: the description's `empty-object` branch (openapi-core
        # does not apply `nullable` beside `oneOf`); the adapter reads both as "no account".
        linked = [srv.user(srv.emails[e]) if e in srv.emails else {} for e in (ae, ce)]
        obj = srv.factory.component(
            "commit", sha=sha, url=f"{srv.url}/repos/{s.owner}/{s.name}/commits/{sha}",
            html_url=f"https://github.com/{s.owner}/{s.name}/commit/{sha}",
            comments_url=f"{srv.url}/repos/{s.owner}/{s.name}/commits/{sha}/comments",
            parents=[], commit={"author": {"name": an, "email": ae, "date": now()},
                    "committer": {"name": cn, "email": ce, "date": now()},
                    "message": subject, "comment_count": 0,
                    "url": f"{srv.url}/repos/{s.owner}/{s.name}/git/commits/{sha}",
                    "tree": {"sha": tree, "url": f"{srv.url}/x"}})
        obj.update(author=linked[0], committer=linked[1])  # replaced, not merged
        out.append(obj)
    return 200, out, {}


class _GraphQLRoot:
    """Resolvers of the GraphQL subset (graphql-core executes the query against it, so the
    answer has exactly the shape GitHub's schema gives it)."""

    def __init__(self, srv: GitHubEmulator) -> None:
        self.srv = srv
        self.viewer = {"login": srv.caller.login}

    def repository(self, info: Any, owner: str, name: str, **_: Any) -> Any:
        s = self.srv.state
        if (owner, name) != (s.owner, s.name):
            return None
        srv = self.srv

        def pull(info: Any, number: int) -> Any:
            item = s.items.get(number)
            return None if item is None or not item["pr"] else srv.pull_node(number)

        return {"autoMergeAllowed": s.auto_merge_allowed, "pullRequest": pull}

    def enablePullRequestAutoMerge(self, info: Any, input: dict[str, Any]) -> Any:
        return self.srv.enable_auto_merge(input)


def graphql(srv, m, q, d):
    text, variables = d.get("query", ""), d.get("variables") or {}
    srv.gql_log.append({"query": text, "variables": variables})
    try:
        errors = validate(srv.gql_schema, parse(text))
    except Exception as exc:
        errors = [exc]
    if errors:
        srv.violations.append(f"graphql: {errors}"[:2000])
        return 200, {"errors": [{"message": str(e)} for e in errors]}, {}
    result = graphql_sync(srv.gql_schema, text, root_value=_GraphQLRoot(srv),
                          variable_values=variables)
    if result.errors:
        return 200, {"data": result.data, "errors": [{"message": e.message}
                                                      for e in result.errors]}, {}
    return 200, {"data": result.data}, {}


def list_releases(srv, m, q, d):
    repo = f"{m.group(1)}/{m.group(2)}"
    if repo not in srv.state.releases:
        return 404, {"message": "Not Found"}, {}
    out = []
    for i, r in enumerate(srv.state.releases[repo]):
        obj = srv.factory.component(
            "release", id=900 + i, tag_name=r["tag"], name=r.get("name", r["tag"]),
            body=r.get("body", ""), draft=False, prerelease=False,
            target_commitish="main", created_at=now(), published_at=now(),
            url=f"{srv.url}/repos/{repo}/releases/{900 + i}",
            html_url=f"https://github.com/{repo}/releases/tag/{r['tag']}",
            author=srv.user("upstream"), assets=[])
        out.append(obj)
    return 200, out, {}


TOP_ROUTES: list[tuple[str, str, Handler]] = [
    (r"/repos/([^/]+)/([^/]+)/releases", "GET", list_releases),
    ("/user", "GET", get_user),
    ("/graphql", "POST", graphql),
]


ROUTES: list[tuple[str, str, Handler]] = [
    (r"/pulls/(\d+)/commits", "GET", pull_commits),
    (r"/issues/comments/(\d+)", "GET", get_comment),
    (r"/collaborators/([^/]+)/permission", "GET", collaborator_permission),
    ("", "GET", get_repo),
    ("/pulls", "GET", list_pulls),
    ("/pulls", "POST", create_pull),
    (r"/pulls/(\d+)", "GET", get_pull),
    (r"/pulls/(\d+)", "PATCH", update_item),
    (r"/pulls/(\d+)/merge", "PUT", merge_pull),
    (r"/pulls/(\d+)/requested_reviewers", "POST", request_reviewers),
    ("/issues", "GET", list_issues),
    ("/issues", "POST", create_issue),
    (r"/issues/(\d+)", "GET", get_issue),
    (r"/issues/(\d+)", "PATCH", update_item),
    (r"/issues/(\d+)/comments", "GET", list_comments),
    (r"/issues/(\d+)/comments", "POST", create_comment),
    (r"/issues/(\d+)/labels", "POST", add_labels),
    (r"/labels/([^/]+)", "GET", get_label),
    ("/labels", "POST", create_label),
    (r"/actions/workflows/([^/]+)", "GET", get_workflow),
    (r"/actions/workflows/([^/]+)/dispatches", "POST", dispatch),
    (r"/commits/([^/]+)/check-runs", "GET", check_runs),
    (r"/commits/([^/]+)/status", "GET", combined_status),
    ("/check-runs", "POST", create_check_run),
    (r"/statuses/([0-9a-f]+)", "POST", create_status),
]
