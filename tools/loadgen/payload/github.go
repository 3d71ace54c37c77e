package payload

import (
	"math/rand/v2"
	"strconv"
	"time"
)

// GitHub-like events: {"action":...,<issue|pull_request|comment>:{...},
// "repository":{...},"sender":{...}} for the issues,
// pull_request and issue_comment events, with labels or reviewers as the
// list that grows with the body size and the text body as the filler.

type githubEvent struct {
	name    string // X-GitHub-Event
	actions []string
	head    func(h []byte, r *rand.Rand, repo string, number int64, action string) ([]byte, int)
	listKey string
	item    func(dst []byte, r *rand.Rand) []byte
}

var githubEvents = []githubEvent{
	{"issues", []string{"opened", "edited", "closed", "labeled"}, issueHead, "labels", appendLabel},
	{"pull_request", []string{"opened", "synchronize", "closed", "ready_for_review"}, pullHead, "requested_reviewers", appendUser},
	{"issue_comment", []string{"created", "edited"}, commentHead, "", nil},
}

var repoSuffixes = []string{"", "", "-api", "-web", "-cli", "-infra"}

// githubDoc draws one GitHub-like event.
func githubDoc(r *rand.Rand, now time.Time) (*sizedDoc, string) {
	ev := &githubEvents[r.IntN(len(githubEvents))]
	owner := pick(r, firstNames) + strconv.Itoa(r.IntN(100))
	repo := owner + "/" + pick(r, words) + pick(r, repoSuffixes)
	number := int64(1 + r.IntN(20000))
	h, slot := ev.head([]byte(`{"action":"`), r, repo, number, pick(r, ev.actions))

	created := pastTime(r, now)
	d := &sizedDoc{
		head: h, slot: slot, tail: githubTail(r, owner, repo),
		members: githubMembers(r, ev.name, repo, number, created),
		padKey:  "body",
		filler:  func(dst []byte, n int) []byte { return appendWords(dst, r, n) },
	}
	if ev.listKey != "" {
		d.listOpen, d.listClose = `,"`+ev.listKey+`":[`, "]"
		d.item = func(dst []byte, _ int) []byte { return ev.item(dst, r) }
	}
	return d, ev.name
}

// issueHead opens an issues event inside its "issue" object.
func issueHead(h []byte, r *rand.Rand, repo string, number int64, action string) ([]byte, int) {
	h = append(h, action...)
	h = append(h, `","issue":{"url":"https://api.github.com/repos/`...)
	h = append(h, repo...)
	h = append(h, "/issues/"...)
	h = strconv.AppendInt(h, number, 10)
	h = append(h, '"')
	h, slot := githubNode(h, r, "I_kwDO")
	return appendNumberTitle(h, r, number), slot
}

// pullHead opens a pull_request event inside its "pull_request" object.
func pullHead(h []byte, r *rand.Rand, repo string, number int64, action string) ([]byte, int) {
	h = append(h, action...)
	h = append(h, `","number":`...)
	h = strconv.AppendInt(h, number, 10)
	h = append(h, `,"pull_request":{"url":"https://api.github.com/repos/`...)
	h = append(h, repo...)
	h = append(h, "/pulls/"...)
	h = strconv.AppendInt(h, number, 10)
	h = append(h, '"')
	h, slot := githubNode(h, r, "PR_kwDO")
	return appendNumberTitle(h, r, number), slot
}

// commentHead opens an issue_comment event inside its "comment" object.
func commentHead(h []byte, r *rand.Rand, repo string, number int64, action string) ([]byte, int) {
	h = append(h, action...)
	h = append(h, `","issue":{"id":`...)
	h = strconv.AppendInt(h, 1e9+r.Int64N(1e9), 10)
	h = appendIntKV(h, "number", number)
	h = append(appendKV(h, "title"), '"')
	h = append(appendSentence(h, r, 2, 4), `","state":"open"},"comment":{"url":"https://api.github.com/repos/`...)
	h = append(h, repo...)
	h = append(h, "/issues/comments/"...)
	h = strconv.AppendInt(h, 1e9+r.Int64N(1e9), 10)
	h = append(h, '"')
	return githubNode(h, r, "IC_kwDO")
}

// githubNode appends id and node_id, which holds the token slot.
func githubNode(h []byte, r *rand.Rand, nodePrefix string) ([]byte, int) {
	h = appendIntKV(h, "id", 1e9+r.Int64N(1e9))
	h = append(appendKV(h, "node_id"), '"')
	h = append(h, nodePrefix...)
	slot := len(h)
	return append(appendBase62(h, r, TokenLen), '"'), slot
}

// appendNumberTitle appends an issue's or pull request's number and title.
func appendNumberTitle(h []byte, r *rand.Rand, number int64) []byte {
	h = appendIntKV(h, "number", number)
	h = append(appendKV(h, "title"), '"')
	return append(appendSentence(h, r, 2, 5), '"')
}

func githubMembers(r *rand.Rand, event, repo string, number int64, at time.Time) [][]byte {
	ms := [][]byte{
		member(func(b []byte) []byte {
			b = append(appendKV(b, "html_url"), `"https://github.com/`...)
			b = append(b, repo...)
			b = append(b, "/issues/"...)
			return append(strconv.AppendInt(b, number, 10), '"')
		}),
		member(func(b []byte) []byte { return appendUser(appendKV(b, "user"), r) }),
	}
	if event != "issue_comment" {
		ms = append(ms, threadMembers(r)...)
	}
	if event == "pull_request" {
		ms = append(ms, pullMembers(r)...)
	}
	ms = append(ms,
		member(func(b []byte) []byte {
			return appendTimeKV(appendTimeKV(b, "created_at", at), "updated_at", at.Add(time.Duration(r.IntN(3600))*time.Second))
		}),
		member(func(b []byte) []byte {
			return appendStrKV(b, "author_association", pick(r, []string{"MEMBER", "CONTRIBUTOR", "OWNER", "NONE"}))
		}),
		member(func(b []byte) []byte {
			b = append(appendKV(b, "reactions"), `{"total_count":`...)
			b = strconv.AppendInt(b, int64(r.IntN(9)), 10)
			b = appendIntKV(b, "+1", int64(r.IntN(5)))
			b = appendIntKV(b, "heart", int64(r.IntN(3)))
			return append(b, '}')
		}),
	)
	var out [][]byte
	for _, m := range ms {
		if r.IntN(5) > 0 { // vary the shape: drop about one member in five
			out = append(out, m)
		}
	}
	return out
}

// threadMembers are the members of issues and pull requests.
func threadMembers(r *rand.Rand) [][]byte {
	return [][]byte{
		member(func(b []byte) []byte { return appendStrKV(b, "state", pick(r, []string{"open", "closed"})) }),
		member(func(b []byte) []byte { return appendBoolKV(b, "locked", false) }),
		member(func(b []byte) []byte { return appendIntKV(b, "comments", int64(r.IntN(40))) }),
		member(func(b []byte) []byte {
			b = append(appendKV(b, "milestone"), `{"title":"v`...)
			b = strconv.AppendInt(append(strconv.AppendInt(b, int64(r.IntN(5)), 10), '.'), int64(r.IntN(30)), 10)
			b = appendIntKV(append(b, '"'), "open_issues", int64(r.IntN(50)))
			return append(b, '}')
		}),
	}
}

// pullMembers are the members only pull requests have.
func pullMembers(r *rand.Rand) [][]byte {
	return [][]byte{
		member(func(b []byte) []byte { return appendBoolKV(b, "draft", r.IntN(4) == 0) }),
		member(func(b []byte) []byte {
			b = append(appendKV(b, "head"), `{"ref":"`...)
			b = append(append(b, pick(r, words)...), `-branch","sha":"`...)
			b = append(appendHex(b, r, 40), `"},"base":{"ref":"main","sha":"`...)
			return append(appendHex(b, r, 40), `"}`...)
		}),
		member(func(b []byte) []byte {
			b = appendIntKV(b, "additions", int64(r.IntN(2000)))
			b = appendIntKV(b, "deletions", int64(r.IntN(800)))
			return appendIntKV(b, "changed_files", int64(1+r.IntN(60)))
		}),
		member(func(b []byte) []byte { return appendBoolKV(b, "merged", false) }),
	}
}

// githubTail closes the event's object and adds repository and sender.
func githubTail(r *rand.Rand, owner, repo string) []byte {
	t := []byte(`},"repository":{"id":`)
	t = strconv.AppendInt(t, 1e8+r.Int64N(9e8), 10)
	t = appendStrKV(t, "name", repo[len(owner)+1:])
	t = appendStrKV(t, "full_name", repo)
	t = append(t, `,"private":false,"owner":{"login":`...)
	t = appendStr(t, owner)
	t = appendIntKV(t, "id", 1e6+r.Int64N(9e7))
	t = append(t, `}},"sender":{"login":"`...)
	t = append(append(t, pick(r, firstNames)...), '-')
	t = append(appendBase62(t, r, 4), '"')
	t = appendIntKV(t, "id", 1e6+r.Int64N(9e7))
	return append(t, `,"type":"User"}}`...)
}

// appendUser appends a GitHub user object.
func appendUser(b []byte, r *rand.Rand) []byte {
	b = append(b, `{"login":"`...)
	b = append(append(b, pick(r, firstNames)...), '-')
	b = append(appendBase62(b, r, 4), '"')
	b = appendIntKV(b, "id", 1e6+r.Int64N(9e7))
	b = append(b, `,"node_id":"MDQ6VXNlcj`...)
	b = append(appendBase62(b, r, 8), `","type":"User","site_admin":false}`...)
	return b
}

// appendLabel appends a GitHub label object.
func appendLabel(b []byte, r *rand.Rand) []byte {
	b = append(b, `{"id":`...)
	b = strconv.AppendInt(b, 1e9+r.Int64N(1e9), 10)
	b = append(b, `,"node_id":"LA_kwDO`...)
	b = append(appendBase62(b, r, 14), `","name":"`...)
	b = append(b, pick(r, words)...)
	b = append(b, `","color":"`...)
	b = append(appendHex(b, r, 6), `","default":false,"description":"`...)
	return append(appendSentence(b, r, 2, 6), `"}`...)
}
