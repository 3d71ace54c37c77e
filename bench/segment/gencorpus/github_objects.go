package main

import (
	"strconv"
	"time"
)

// GitHub's user and repository objects, shared by every event, with the
// API and HTML URLs GitHub derives from the login and the full name. The
// repository drops about half of the 40-odd *_url templates GitHub sends
// so that an event fits the corpus's 8 KiB cap; that makes the corpus
// slightly less redundant than real GitHub traffic, not more.

// user appends the full user object of who(c).
func user(who func(c *ctx) *ghUser) gen {
	return func(c *ctx, b []byte) []byte { return appendUser(b, who(c)) }
}

func appendUser(b []byte, u *ghUser) []byte {
	id := strconv.FormatInt(u.id, 10)
	api := "https://api.github.com/users/" + u.login
	b = append(b, `{"login":"`...)
	b = append(b, u.login...)
	b = append(b, `","id":`...)
	b = append(b, id...)
	b = append(b, `,"node_id":"`...)
	b = append(b, u.nodeID...)
	b = append(b, `","avatar_url":"https://avatars.githubusercontent.com/u/`...)
	b = append(b, id...)
	b = append(b, `?v=4","gravatar_id":"","url":"`...)
	b = append(b, api...)
	b = append(append(append(b, `","html_url":"https://github.com/`...), u.login...), '"')
	for _, s := range [...]string{"followers", "following{/other_user}", "gists{/gist_id}", "starred{/owner}{/repo}",
		"subscriptions", "orgs", "repos", "events{/privacy}", "received_events"} {
		key := s
		for i := range len(s) {
			if s[i] == '{' {
				key = s[:i]
				break
			}
		}
		if key == "orgs" {
			key = "organizations"
		}
		b = append(append(append(append(append(append(b, `,"`...), key...), `_url":"`...), api...), '/'), s...)
		b = append(b, '"')
	}
	b = append(append(append(b, `,"type":"`...), u.kind...), `","user_view_type":"public","site_admin":false}`...)
	return b
}

var (
	actor  = user(func(c *ctx) *ghUser { return c.actor })
	member = user(func(c *ctx) *ghUser { return c.org.members[c.skewed(len(c.org.members))] })
)

// repoURL appends the API URL of the event's repository and then suffix.
func repoURL(suffix string) gen {
	return sf(func(c *ctx, b []byte) []byte {
		return append(append(append(b, "https://api.github.com/repos/"...), c.repo.fullName...), suffix...)
	})
}

// htmlURL appends the web URL of the event's repository and then suffix.
func htmlURL(suffix string) gen {
	return sf(func(c *ctx, b []byte) []byte {
		return append(append(append(b, "https://github.com/"...), c.repo.fullName...), suffix...)
	})
}

// numbered appends the event's repository URL, a path and its number.
func numbered(api bool, path, suffix string) gen {
	return sf(func(c *ctx, b []byte) []byte {
		if api {
			b = append(b, "https://api.github.com/repos/"...)
		} else {
			b = append(b, "https://github.com/"...)
		}
		b = append(append(append(b, c.repo.fullName...), path...), '/')
		return append(strconv.AppendInt(b, c.number, 10), suffix...)
	})
}

var repositoryObj gen = func(c *ctx, b []byte) []byte {
	r := c.repo
	fields := []field{
		f("id", lit(strconv.FormatInt(r.id, 10))), f("node_id", str(r.nodeID)), f("name", str(r.name)),
		f("full_name", str(r.fullName)), f("private", lit(strconv.FormatBool(r.private))),
		f("owner", user(func(c *ctx) *ghUser { return c.org.owner })), f("html_url", htmlURL("")),
		f("description", str(r.description)), f("fork", lit("false")), f("url", repoURL("")),
	}
	for _, s := range [...]string{"forks", "hooks", "events", "branches{/branch}", "tags",
		"statuses/{sha}", "commits{/sha}", "issues{/number}", "pulls{/number}", "labels{/name}"} {
		key := s
		for i := range len(s) {
			if s[i] == '{' || s[i] == '/' {
				key = s[:i]
				break
			}
		}
		fields = append(fields, f(key+"_url", repoURL("/"+s)))
	}
	lang := lit("null")
	if r.language != "null" {
		lang = str(r.language)
	}
	fields = append(fields,
		f("created_at", str(r.created.UTC().Format(time.RFC3339))), f("updated_at", iso(48*time.Hour)), f("pushed_at", iso(time.Hour)),
		f("git_url", sf(func(c *ctx, b []byte) []byte {
			return append(append(append(b, "git://github.com/"...), r.fullName...), ".git"...)
		})),
		f("ssh_url", sf(func(c *ctx, b []byte) []byte {
			return append(append(append(b, "git@github.com:"...), r.fullName...), ".git"...)
		})),
		f("clone_url", htmlURL(".git")), f("svn_url", htmlURL("")), f("homepage", lit("null")),
		f("size", lit(strconv.FormatInt(r.size, 10))), f("stargazers_count", lit(strconv.FormatInt(r.stars, 10))),
		f("watchers_count", lit(strconv.FormatInt(r.stars, 10))), f("language", lang),
		f("has_issues", lit("true")), f("has_projects", lit("true")), f("has_downloads", lit("true")), f("has_wiki", lit("false")),
		f("has_pages", lit("false")), f("has_discussions", lit("false")), f("forks_count", lit(strconv.FormatInt(r.forks, 10))),
		f("mirror_url", lit("null")), f("archived", lit("false")), f("disabled", lit("false")),
		f("open_issues_count", lit(strconv.FormatInt(r.issues, 10))), f("license", lit("null")), f("allow_forking", lit("true")),
		f("is_template", lit("false")), f("web_commit_signoff_required", lit("false")), f("topics", lit("[]")),
		f("visibility", str(map[bool]string{true: "private", false: "public"}[r.private])),
		f("forks", lit(strconv.FormatInt(r.forks, 10))), f("open_issues", lit(strconv.FormatInt(r.issues, 10))),
		f("watchers", lit(strconv.FormatInt(r.stars, 10))), f("default_branch", str(r.branch)),
	)
	return obj(fields...)(c, b)
}

var labelObj gen = func(c *ctx, b []byte) []byte {
	l := pick(c, c.org.labels)
	return obj(f("id", lit(strconv.FormatInt(l.id, 10))), f("node_id", str(l.nodeID)), f("url", repoURL("/labels/"+l.name)),
		f("name", str(l.name)), f("color", str(l.color)), f("default", lit("false")), f("description", str(l.description)))(c, b)
}

var reactions = obj(
	f("url", numbered(true, "/issues", "/reactions")), f("total_count", num(0, 12)), f("+1", num(0, 6)), f("-1", num(0, 1)),
	f("laugh", lit("0")), f("hooray", num(0, 2)), f("confused", lit("0")), f("heart", num(0, 3)), f("rocket", num(0, 2)), f("eyes", num(0, 1)),
)
