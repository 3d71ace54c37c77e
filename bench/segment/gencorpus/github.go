package main

import "time"

// GitHub events (X-GitHub-Event and action), shaped like GitHub's webhook
// payloads: the subject (issue, comment, pull request, commits, job), then
// repository and sender.

type githubKind struct {
	weight  int
	event   string
	actions []string
	payload []field // before repository and sender
}

var githubKinds = []githubKind{
	{30, "push", []string{""}, pushFields},
	{15, "issues", []string{"opened", "labeled", "closed", "edited", "assigned"}, []field{f("issue", issue(bigText(4)))}},
	{20, "issue_comment", []string{"created", "edited"}, []field{f("issue", issue(text(4, 30))), f("comment", comment)}},
	{20, "pull_request", []string{"opened", "synchronize", "closed", "review_requested", "ready_for_review"}, pullFields},
	{10, "workflow_job", []string{"completed", "in_progress", "queued"}, []field{f("workflow_job", workflowJob)}},
	{5, "star", []string{"created", "deleted"}, []field{f("starred_at", iso(0))}},
}

// githubEvent draws one event of o: its X-GitHub-Event name and the
// template of its body.
func githubEvent(c *ctx, o *githubOrg) (string, gen) {
	o.setScene(c)
	k, _ := weighted(c, githubKinds, func(k githubKind) int { return k.weight })
	var fields []field
	if a := pick(c, k.actions); a != "" {
		fields = append(fields, f("action", str(a)))
	}
	fields = append(fields, k.payload...)
	fields = append(fields, f("repository", repositoryObj), f("sender", actor))
	return k.event, obj(fields...)
}

func issue(body gen) gen {
	return obj(
		f("url", numbered(true, "/issues", "")), f("repository_url", repoURL("")),
		f("labels_url", numbered(true, "/issues", "/labels{/name}")), f("comments_url", numbered(true, "/issues", "/comments")),
		f("events_url", numbered(true, "/issues", "/events")), f("html_url", numbered(false, "/issues", "")),
		f("id", num(1e9, 3e9)), f("node_id", token("I_kwDO", 16)), f("number", nf(func(c *ctx) int64 { return c.number })),
		f("title", text(3, 10)), f("user", member), f("labels", arr(0, 3, labelObj)),
		f("state", oneOf("open", "closed")), f("locked", lit("false")), f("assignee", maybe(0.3, member)),
		f("assignees", arr(0, 1, member)), f("milestone", lit("null")), f("comments", num(0, 40)),
		f("created_at", iso(30*24*time.Hour)), f("updated_at", iso(time.Hour)), f("closed_at", maybe(0.2, iso(time.Hour))),
		f("author_association", oneOf("MEMBER", "CONTRIBUTOR", "OWNER", "NONE", "COLLABORATOR")),
		f("active_lock_reason", lit("null")), f("sub_issues_summary", lit(`{"total":0,"completed":0,"percent_completed":0}`)),
		f("body", maybe(0.9, body)), f("reactions", reactions), f("timeline_url", numbered(true, "/issues", "/timeline")),
		f("performed_via_github_app", lit("null")), f("state_reason", maybe(0.2, str("completed"))),
	)
}

var comment = obj(
	f("url", sf(func(c *ctx, b []byte) []byte {
		return appendInt(append(append(append(b, "https://api.github.com/repos/"...), c.repo.fullName...), "/issues/comments/"...), 2e9+c.r.Int64N(1e9))
	})),
	f("html_url", numbered(false, "/issues", "#issuecomment-2417733120")), f("issue_url", numbered(true, "/issues", "")),
	f("id", num(2e9, 3e9)), f("node_id", token("IC_kwDO", 20)), f("user", actor),
	f("created_at", iso(time.Minute)), f("updated_at", iso(time.Minute)),
	f("author_association", oneOf("MEMBER", "CONTRIBUTOR", "OWNER", "NONE")), f("body", bigText(3)),
	f("reactions", reactions), f("performed_via_github_app", lit("null")),
)

var sha gen = func(c *ctx, b []byte) []byte {
	c.sha = c.hex(c.sha[:0], 40)
	return append(append(append(b, '"'), c.sha...), '"')
}

var commit = obj(
	f("id", sha), f("tree_id", hexStr(40)), f("distinct", lit("true")),
	f("message", sf(func(c *ctx, b []byte) []byte {
		b = append(b, pick(c, []string{"fix: ", "feat: ", "chore(deps): bump ", "docs: ", "refactor: ", "test: ", ""})...)
		return c.prose(b, 3+c.r.IntN(12))
	})),
	f("timestamp", iso(2*time.Hour)),
	f("url", sf(func(c *ctx, b []byte) []byte {
		return append(append(append(append(b, "https://github.com/"...), c.repo.fullName...), "/commit/"...), c.sha...)
	})),
	f("author", obj(f("name", sf(func(c *ctx, b []byte) []byte { return append(b, c.actor.name...) })),
		f("email", sf(func(c *ctx, b []byte) []byte { return append(b, c.actor.email...) })),
		f("username", sf(func(c *ctx, b []byte) []byte { return append(b, c.actor.login...) })))),
	f("committer", lit(`{"name":"GitHub","email":"noreply@github.com","username":"web-flow"}`)),
	f("added", arr(0, 2, path)), f("removed", arr(0, 1, path)), f("modified", arr(1, 4, path)),
)

var path = sf(func(c *ctx, b []byte) []byte {
	b = append(b, pick(c, []string{"src/", "internal/", "pkg/", "cmd/", "docs/", "test/", ".github/workflows/"})...)
	b = append(append(b, pick(c, repoWords)...), '/')
	b = append(b, pick(c, repoWords)...)
	return append(b, pick(c, []string{".go", ".ts", ".py", ".md", ".yml", "_test.go", ".rs"})...)
})

var pushFields = []field{
	f("ref", sf(func(c *ctx, b []byte) []byte {
		return append(append(b, "refs/heads/"...), pick(c, []string{c.repo.branch, "feature/" + pick(c, repoWords), "release"})...)
	})),
	f("before", hexStr(40)), f("after", hexStr(40)),
	f("pusher", obj(f("name", sf(func(c *ctx, b []byte) []byte { return append(b, c.actor.login...) })),
		f("email", sf(func(c *ctx, b []byte) []byte { return append(b, c.actor.email...) })))),
	f("created", lit("false")), f("deleted", lit("false")), f("forced", chance(0.05)), f("base_ref", lit("null")),
	f("compare", sf(func(c *ctx, b []byte) []byte {
		b = append(append(append(b, "https://github.com/"...), c.repo.fullName...), "/compare/"...)
		return c.hex(append(c.hex(b, 12), "..."...), 12)
	})),
	f("commits", fill(commit)), f("head_commit", commit),
}

var pullFields = []field{
	f("number", nf(func(c *ctx) int64 { return c.number })),
	f("pull_request", obj(
		f("url", numbered(true, "/pulls", "")), f("id", num(1e9, 3e9)), f("node_id", token("PR_kwDO", 20)),
		f("html_url", numbered(false, "/pull", "")), f("diff_url", numbered(false, "/pull", ".diff")),
		f("patch_url", numbered(false, "/pull", ".patch")), f("issue_url", numbered(true, "/issues", "")),
		f("number", nf(func(c *ctx) int64 { return c.number })), f("state", oneOf("open", "closed")), f("locked", lit("false")),
		f("title", text(3, 10)), f("user", actor), f("body", maybe(0.85, bigText(5))),
		f("created_at", iso(7*24*time.Hour)), f("updated_at", iso(time.Minute)), f("closed_at", lit("null")), f("merged_at", lit("null")),
		f("merge_commit_sha", hexStr(40)), f("assignee", lit("null")), f("assignees", lit("[]")),
		f("requested_reviewers", arr(0, 2, member)), f("requested_teams", lit("[]")), f("labels", arr(0, 2, labelObj)),
		f("milestone", lit("null")), f("draft", chance(0.2)),
		f("commits_url", numbered(true, "/pulls", "/commits")), f("review_comments_url", numbered(true, "/pulls", "/comments")),
		f("review_comment_url", repoURL("/pulls/comments{/number}")), f("comments_url", numbered(true, "/issues", "/comments")),
		f("statuses_url", sf(func(c *ctx, b []byte) []byte {
			return c.hex(append(append(append(b, "https://api.github.com/repos/"...), c.repo.fullName...), "/statuses/"...), 40)
		})),
		f("head", obj(f("label", sf(func(c *ctx, b []byte) []byte { return append(append(b, c.actor.login...), ":fix-"...) })),
			f("ref", sf(func(c *ctx, b []byte) []byte { return append(append(b, "fix-"...), pick(c, repoWords)...) })), f("sha", hexStr(40)))),
		f("base", obj(f("label", sf(func(c *ctx, b []byte) []byte {
			return append(append(append(b, c.org.owner.login...), ':'), c.repo.branch...)
		})),
			f("ref", sf(func(c *ctx, b []byte) []byte { return append(b, c.repo.branch...) })), f("sha", hexStr(40)))),
		f("author_association", oneOf("MEMBER", "CONTRIBUTOR", "OWNER")), f("auto_merge", lit("null")), f("active_lock_reason", lit("null")),
		f("merged", lit("false")), f("mergeable", maybe(0.6, chance(0.9))), f("rebaseable", maybe(0.6, chance(0.9))),
		f("mergeable_state", oneOf("unknown", "clean", "blocked", "dirty")), f("merged_by", lit("null")),
		f("comments", num(0, 20)), f("review_comments", num(0, 30)), f("maintainer_can_modify", lit("false")),
		f("commits", num(1, 30)), f("additions", num(1, 3000)), f("deletions", num(0, 1500)), f("changed_files", num(1, 60)),
	)),
}

var workflowJob = obj(
	f("id", num(2e10, 3e10)), f("run_id", num(1e10, 2e10)), f("workflow_name", oneOf("CI", "Release", "Lint", "Deploy", "CodeQL")),
	f("head_branch", sf(func(c *ctx, b []byte) []byte { return append(b, c.repo.branch...) })),
	f("run_url", sf(func(c *ctx, b []byte) []byte {
		return appendInt(append(append(append(b, "https://api.github.com/repos/"...), c.repo.fullName...), "/actions/runs/"...), 1e10+c.r.Int64N(1e10))
	})),
	f("run_attempt", num(1, 2)), f("node_id", token("CR_kwDO", 22)), f("head_sha", hexStr(40)),
	f("url", sf(func(c *ctx, b []byte) []byte {
		return appendInt(append(append(append(b, "https://api.github.com/repos/"...), c.repo.fullName...), "/actions/jobs/"...), 2e10+c.r.Int64N(1e10))
	})),
	f("html_url", htmlURL("/actions/runs/12093817432/job/33718297651")),
	f("status", oneOf("completed", "in_progress", "queued")), f("conclusion", maybe(0.7, oneOf("success", "failure", "cancelled", "skipped"))),
	f("created_at", iso(10*time.Minute)), f("started_at", iso(5*time.Minute)), f("completed_at", maybe(0.7, iso(time.Minute))),
	f("name", oneOf("build", "test (ubuntu-latest, 1.22)", "lint", "deploy / production", "e2e")),
	f("steps", fill(obj(f("name", oneOf("Set up job", "Run actions/checkout@v4", "Set up Go", "Build", "Test", "Post Run actions/checkout@v4", "Complete job")),
		f("status", str("completed")), f("conclusion", oneOf("success", "skipped", "failure")), f("number", num(1, 20)),
		f("started_at", iso(5*time.Minute)), f("completed_at", iso(time.Minute))))),
	f("check_run_url", sf(func(c *ctx, b []byte) []byte {
		return appendInt(append(append(append(b, "https://api.github.com/repos/"...), c.repo.fullName...), "/check-runs/"...), 3e10+c.r.Int64N(1e10))
	})),
	f("labels", lit(`["ubuntu-latest"]`)), f("runner_id", num(1, 500)),
	f("runner_name", oneOf("GitHub Actions 12", "GitHub Actions 3", "runner-pool-a-7")), f("runner_group_id", num(0, 2)),
	f("runner_group_name", oneOf("GitHub Actions", "Default")),
)
