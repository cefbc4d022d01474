"""The GraphQL documents pinbump sends to GitHub, in one place.

tests/graphql/extract_subset.py extracts the part of GitHub's public schema they use, and the
emulator validates every request against it, as REST is held to the OpenAPI description.
"""

from __future__ import annotations

VIEWER = "query Viewer { viewer { login } }"

PULL_AUTO_MERGE = """
query PullAutoMerge($owner: String!, $name: String!, $number: Int!) {
  repository(owner: $owner, name: $name) {
    autoMergeAllowed
    pullRequest(number: $number) { id autoMergeRequest { enabledAt } }
  }
}
"""

ENABLE_AUTO_MERGE = """
mutation EnableAutoMerge($id: ID!, $method: PullRequestMergeMethod!, $sha: GitObjectID!) {
  enablePullRequestAutoMerge(input: {pullRequestId: $id, mergeMethod: $method,
                                     expectedHeadOid: $sha}) {
    pullRequest { number autoMergeRequest { enabledAt } }
  }
}
"""

DOCUMENTS = {"viewer": VIEWER, "pull_auto_merge": PULL_AUTO_MERGE,
             "enable_auto_merge": ENABLE_AUTO_MERGE}
