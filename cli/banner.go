package cli

import (
	"fmt"
	"io"
	"time"
)

// banner tells the operator of the embedded default how to send a hook,
// watch it delivered and archived, read it back and add a source.
func (n *node) banner(w io.Writer) {
	admin := "http://" + n.cfg.Admin.Listen
	fmt.Fprintf(w, "\nAnkusa is running on its embedded default config (data under %s).\n", n.cfg.Node.DataDir)
	fmt.Fprintf(w, "Send a hook:\n\n  curl -i -X POST http://%s/webhooks/demo -H 'content-type: application/json' -d '{\"hello\":\"world\"}'\n\n", n.publicAddr)
	for _, name := range n.cfg.SourceNames() {
		for _, sk := range n.cfg.Sources[name].Sinks {
			if sk.Type == "file" {
				fmt.Fprintf(w, "Delivered hooks are appended to %s (one JSON envelope a line): tail -f it\n\n  tail -f %s\n\n", sk.Path, sk.Path)
			}
		}
	}
	if n.cfg.Archive.Type == "dir" {
		fmt.Fprintf(w, "Sealed segments are archived to %s (a segment is sealed %v after it is begun).\n\n", n.cfg.Archive.Path, time.Duration(n.cfg.Segment.MaxAge))
	}
	if n.tokenPath != "" {
		fmt.Fprintf(w, "Console: %s/console/ (log in with the token in %s)\n\n", admin, n.tokenPath)
		if n.tokenMinted != "" {
			fmt.Fprintf(w, "Admin token (shown once; kept in %s, mode 0600):\n\n  %s\n\n", n.tokenPath, n.tokenMinted)
		} else {
			fmt.Fprintf(w, "Admin token: in %s\n\n", n.tokenPath)
		}
		auth := fmt.Sprintf("-H \"Authorization: Bearer $(cat %s)\"", n.tokenPath)
		fmt.Fprintf(w, "Read the hook back (its id is in the answer above):\n\n  curl -s %s %s/v1/tenants/default/hooks/<id>\n\n", auth, admin)
		fmt.Fprintf(w, "Add a source (it answers on /webhooks/mine at once):\n\n  curl -s %s -X POST %s/v1/tenants/default/sources -d '{\"name\": \"mine\", \"verify\": {\"type\": \"none\"}}'\n\n", auth, admin)
	}
	fmt.Fprintf(w, "Metrics: %s/metrics   Stop: Ctrl-C\n\n", admin)
}
