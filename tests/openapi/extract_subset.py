"""Extract the subset of GitHub's official OpenAPI description that pinbump uses.

Source: the npm package @octokit/openapi (generated/api.github.com.json). Run:

    npm pack @octokit/openapi@23.0.2 && tar xzf octokit-openapi-23.0.2.tgz
    python tests/openapi/extract_subset.py package/generated/api.github.com.json

It keeps the operations listed in OPERATIONS with every component they reference
(transitively), drops examples, and writes tests/openapi/github-subset.json.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

SOURCE_PACKAGE = "@octokit/openapi@23.0.2"
OPERATIONS = [
    ("get", "/repos/{owner}/{repo}"),
    ("get", "/repos/{owner}/{repo}/pulls"),
    ("post", "/repos/{owner}/{repo}/pulls"),
    ("get", "/repos/{owner}/{repo}/pulls/{pull_number}"),
    ("patch", "/repos/{owner}/{repo}/pulls/{pull_number}"),
    ("put", "/repos/{owner}/{repo}/pulls/{pull_number}/merge"),
    ("post", "/repos/{owner}/{repo}/pulls/{pull_number}/requested_reviewers"),
    ("get", "/repos/{owner}/{repo}/issues"),
    ("post", "/repos/{owner}/{repo}/issues"),
    ("get", "/repos/{owner}/{repo}/issues/{issue_number}"),
    ("patch", "/repos/{owner}/{repo}/issues/{issue_number}"),
    ("get", "/repos/{owner}/{repo}/issues/{issue_number}/comments"),
    ("post", "/repos/{owner}/{repo}/issues/{issue_number}/comments"),
    ("post", "/repos/{owner}/{repo}/issues/{issue_number}/labels"),
    ("get", "/repos/{owner}/{repo}/labels/{name}"),
    ("post", "/repos/{owner}/{repo}/labels"),
    ("get", "/repos/{owner}/{repo}/actions/workflows/{workflow_id}"),
    ("post", "/repos/{owner}/{repo}/actions/workflows/{workflow_id}/dispatches"),
    ("get", "/repos/{owner}/{repo}/commits/{ref}/check-runs"),
    ("get", "/repos/{owner}/{repo}/commits/{ref}/status"),
    ("post", "/repos/{owner}/{repo}/check-runs"),
    ("post", "/repos/{owner}/{repo}/statuses/{sha}"),
    ("get", "/user"),
    ("get", "/repos/{owner}/{repo}/issues/comments/{comment_id}"),
    ("get", "/repos/{owner}/{repo}/pulls/{pull_number}/commits"),
    ("get", "/repos/{owner}/{repo}/collaborators/{username}/permission"),
    ("get", "/repos/{owner}/{repo}/releases"),
    ("put", "/repos/{owner}/{repo}/pulls/{pull_number}/update-branch"),
    ("get", "/repos/{owner}/{repo}/pulls/{pull_number}/reviews"),
    ("get", "/repos/{owner}/{repo}/installation"),
    ("post", "/app/installations/{installation_id}/access_tokens"),
]
OUT = Path(__file__).with_name("github-subset.json")


def _refs(node: Any) -> set[str]:
    found: set[str] = set()
    if isinstance(node, dict):
        ref = node.get("$ref")
        if isinstance(ref, str):
            found.add(ref)
        for value in node.values():
            found |= _refs(value)
    elif isinstance(node, list):
        for value in node:
            found |= _refs(value)
    return found


def _strip(node: Any) -> Any:
    if isinstance(node, dict):
        return {k: _strip(v) for k, v in node.items()
                if k not in ("examples", "example", "x-github", "externalDocs")}
    if isinstance(node, list):
        return [_strip(v) for v in node]
    return node


def extract(spec: dict[str, Any]) -> dict[str, Any]:
    paths: dict[str, Any] = {}
    for method, path in OPERATIONS:
        item = spec["paths"][path]
        paths.setdefault(path, {k: v for k, v in item.items() if k == "parameters"})
        paths[path][method] = item[method]
    paths = _strip(paths)
    components: dict[str, dict[str, Any]] = {}
    todo = sorted(_refs(paths))
    seen: set[str] = set()
    while todo:
        ref = todo.pop()
        if ref in seen:
            continue
        seen.add(ref)
        _, _, kind, name = ref.split("/", 3)
        node = _strip(spec["components"][kind][name])
        components.setdefault(kind, {})[name] = node
        todo.extend(sorted(_refs(node) - seen))
    return {
        "openapi": spec["openapi"],
        "info": {**spec["info"], "x-subset-of": SOURCE_PACKAGE,
                 "x-operations": [f"{m.upper()} {p}" for m, p in OPERATIONS]},
        "servers": spec.get("servers", []),
        "paths": paths,
        "components": {k: dict(sorted(v.items())) for k, v in sorted(components.items())},
    }


def main() -> None:
    spec = json.loads(Path(sys.argv[1]).read_text())
    OUT.write_text(json.dumps(extract(spec), indent=1, sort_keys=True) + "\n")
    print(f"wrote {OUT} ({OUT.stat().st_size // 1024} KiB, {len(OPERATIONS)} operations)")


if __name__ == "__main__":
    main()
