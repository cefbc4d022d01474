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
    pullRequest(number: $number) {
      id autoMergeRequest { enabledAt } isMergeQueueEnabled isInMergeQueue
    }
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

# A base branch that requires a merge queue: GitHub refuses the REST merge ("Changes must be
# made through the merge queue", HTTP 405: pascalgn/automerge-action#235, akuity/kargo#5405)
# and the queue's own rule sets the merge method. Enabling auto-merge there is "merge when
# ready": GitHub adds the PR to the queue once its required checks pass, at once if they
# already have (the GraphQL call `gh pr merge` makes on such a base, cli/cli
# pkg/cmd/pr/merge/merge.go). No merge method is named; the head SHA still pins it.
ENABLE_QUEUED_MERGE = """
mutation EnableQueuedMerge($id: ID!, $sha: GitObjectID!) {
  enablePullRequestAutoMerge(input: {pullRequestId: $id, expectedHeadOid: $sha}) {
    pullRequest { number autoMergeRequest { enabledAt } isInMergeQueue }
  }
}
"""

DOCUMENTS = {"viewer": VIEWER, "pull_auto_merge": PULL_AUTO_MERGE,
             "enable_auto_merge": ENABLE_AUTO_MERGE, "enable_queued_merge": ENABLE_QUEUED_MERGE}
