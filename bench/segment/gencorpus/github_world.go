package main

import (
	"strconv"
	"time"
)

// The GitHub side of the world: organisations (one tenant each) with their
// repositories, members and labels. One repository sends most of an
// organisation's hooks, as in practice.

type githubOrg struct {
	tenant  string
	owner   *ghUser // the organisation account
	repos   []*repository
	members []*ghUser
	labels  []label
	hookID  int64
}

type ghUser struct {
	login, nodeID, name, email string
	id                         int64
	kind                       string // User, Organization, Bot
}

type repository struct {
	name, fullName, nodeID, description, language, branch string
	id, size, stars, forks, issues                        int64
	created                                               time.Time
	private                                               bool
}

type label struct {
	name, color, nodeID, description string
	id                               int64
}

var githubTenants = []string{"octo-platform", "lumen-dev", "ferrite-io", "quokka-labs", "tidepool", "orbit-ci"}

var (
	repoWords  = splitWords(`api web cli sdk infra docs core worker gateway dashboard mobile billing auth search ingest`)
	languages  = []string{"Go", "TypeScript", "Python", "Rust", "Java", "Ruby", "null"}
	labelNames = splitWords(`bug enhancement documentation duplicate good-first-issue help-wanted invalid question wontfix
priority-high priority-low needs-triage area-api area-ui dependencies security performance flaky-test`)
)

func newGithubOrg(c *ctx, i int) *githubOrg {
	o := &githubOrg{tenant: githubTenants[i], hookID: 1e8 + c.r.Int64N(4e8)}
	o.owner = newGhUser(c, githubTenants[i], "Organization")
	for range 8 + c.r.IntN(40) {
		o.members = append(o.members, newGhUser(c, pick(c, firstNames)+"-"+string(c.base62(nil, 4)), "User"))
	}
	o.members = append(o.members, newGhUser(c, "dependabot[bot]", "Bot"), newGhUser(c, "github-actions[bot]", "Bot"))
	for range 2 + c.r.IntN(6) {
		name := pick(c, repoWords)
		if c.r.IntN(2) == 0 {
			name += "-" + pick(c, repoWords)
		}
		lang := pick(c, languages)
		o.repos = append(o.repos, &repository{
			name: name, fullName: o.owner.login + "/" + name, nodeID: "R_kgDO" + string(c.base62(nil, 6)),
			description: string(c.prose(nil, 4+c.r.IntN(8))), language: lang, branch: pick(c, []string{"main", "master", "develop"}),
			id: 1e8 + c.r.Int64N(8e8), size: c.r.Int64N(200000), stars: c.r.Int64N(5000), forks: c.r.Int64N(600),
			issues: c.r.Int64N(300), created: c.at.Add(-time.Duration(c.r.IntN(2000)) * 24 * time.Hour), private: c.r.IntN(3) > 0,
		})
	}
	for _, n := range labelNames {
		if c.r.IntN(3) > 0 {
			o.labels = append(o.labels, label{
				name: n, color: string(c.hex(nil, 6)), nodeID: "LA_kwDO" + string(c.base62(nil, 14)),
				description: string(c.prose(nil, 2+c.r.IntN(5))), id: 1e9 + c.r.Int64N(7e9),
			})
		}
	}
	return o
}

func newGhUser(c *ctx, login, kind string) *ghUser {
	id := 1e6 + c.r.Int64N(15e7)
	return &ghUser{
		login: login, id: id, kind: kind, nodeID: "MDQ6VXNlcj" + strconv.FormatInt(id*7919%1e9, 36),
		name:  pick(c, firstNames) + " " + pick(c, lastNames),
		email: login + "@users.noreply.github.com",
	}
}

// setScene picks the repository, the actor and the issue or pull request
// number of the event: recent numbers again and again (a discussion).
func (o *githubOrg) setScene(c *ctx) {
	c.org = o
	c.repo = o.repos[c.skewed(len(o.repos))]
	c.actor = o.members[c.skewed(len(o.members))]
	c.number = 1 + c.r.Int64N(20+c.repo.issues*3)
}
