package rabbittest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// Ctls are the rabbitmqctl commands there are, in the order to try them:
// ANKUSA_RABBITMQCTL, the one scripts/ensure-rabbitmq.sh writes for the
// node it started, $TMPDIR/ankusa-rabbitmq/rabbitmqctl (that node's HOME
// holds its cookie), then the system's.
func Ctls() []string {
	var c []string
	if p := os.Getenv("ANKUSA_RABBITMQCTL"); p != "" {
		c = append(c, p)
	}
	tmp := os.Getenv("TMPDIR")
	if tmp == "" {
		tmp = "/tmp"
	}
	c = append(c, filepath.Join(tmp, "ankusa-rabbitmq", "rabbitmqctl"))
	if p, err := exec.LookPath("rabbitmqctl"); err == nil {
		c = append(c, p)
	}
	c = append(c, "/usr/sbin/rabbitmqctl")
	var have []string
	for _, p := range c {
		if st, err := os.Stat(p); err == nil && !st.IsDir() && !slices.Contains(have, p) {
			have = append(have, p)
		}
	}
	return have
}

// Conn is one connection as the broker lists it.
type Conn struct {
	Ctl  string // the rabbitmqctl that knows it
	PID  string // its Erlang pid, what close_connection takes in RabbitMQ 3.x
	Name string // the broker's name for it, "127.0.0.1:54321 -> 127.0.0.1:5672"
}

// FindConn finds the one connection whose client property
// connection_name is cn, asking each of Ctls in turn. With no rabbitmqctl
// at all it calls Need; it fails the test when none of them lists exactly
// one such connection.
func FindConn(t testing.TB, cn string) Conn {
	t.Helper()
	ctls := Ctls()
	if len(ctls) == 0 {
		Need(t, "rabbitmqctl is not installed")
	}
	want := `{"connection_name","` + cn + `"}`
	var tried []string
	for _, ctl := range ctls {
		out, err := exec.Command(ctl, "-q", "--no-table-headers", "list_connections", "pid", "name", "client_properties").CombinedOutput()
		if err != nil {
			tried = append(tried, fmt.Sprintf("%s: %v: %.300s", ctl, err, out))
			continue
		}
		c := Conn{Ctl: ctl}
		n := 0
		for line := range strings.Lines(string(out)) {
			f := strings.SplitN(strings.TrimRight(line, "\n"), "\t", 3)
			if len(f) == 3 && strings.Contains(f[2], want) {
				c.PID, c.Name = f[0], f[1]
				n++
			}
		}
		if n == 1 {
			return c
		}
		tried = append(tried, fmt.Sprintf("%s: %d connections named %q", ctl, n, cn))
	}
	t.Fatalf("cannot find the connection named %q:\n%s", cn, strings.Join(tried, "\n"))
	return Conn{}
}

// Close has the broker close the connection (rabbitmqctl
// close_connection), telling the client why.
func (c Conn) Close(t testing.TB, reason string) {
	t.Helper()
	if out, err := exec.Command(c.Ctl, "-q", "close_connection", c.PID, reason).CombinedOutput(); err != nil {
		t.Fatalf("%s close_connection %s: %v\n%s", c.Ctl, c.PID, err, out)
	}
}
