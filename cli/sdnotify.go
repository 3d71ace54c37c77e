package cli

import (
	"fmt"
	"net"
	"os"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"
)

// notifySocket is the environment variable a service manager (systemd,
// Type=notify) names its notification socket in.
const notifySocket = "NOTIFY_SOCKET"

// notifyTimeout bounds one send: the manager reads its socket at once, so
// a send that waits this long has nobody reading it.
const notifyTimeout = time.Second

// notifier tells the service manager how the node is doing, by the
// protocol of sd_notify(3): one datagram of newline-separated KEY=value
// lines to the unix datagram socket named in $NOTIFY_SOCKET, a path or,
// with a leading '@', a name in the abstract namespace. serve sends
// READY=1 once the node serves and STOPPING=1 when the drain begins.
//
// Written by hand (a dial and a write) rather than with a library: it is
// two messages. A failed send is logged once and is never fatal: the node
// serves the same without a manager that hears it. Without $NOTIFY_SOCKET
// (not run by a manager, or one not waiting for notifications) every send
// is a no-op. Safe for concurrent use.
type notifier struct {
	addr string // the socket; "" sends nothing
	log  *zap.Logger
	once sync.Once // the one log line of a failed send
}

// newNotifierFromEnv reads $NOTIFY_SOCKET and unsets it, as sd_notify's
// callers do, so that no process the node might start takes the manager's
// socket for its own.
func newNotifierFromEnv(log *zap.Logger) *notifier {
	addr := os.Getenv(notifySocket)
	_ = os.Unsetenv(notifySocket)
	return newNotifier(addr, log)
}

func newNotifier(addr string, log *zap.Logger) *notifier {
	return &notifier{addr: addr, log: log}
}

// ready says the node serves: recovery is done and both listeners accept.
// MAINPID names this process, in case the manager started a wrapper.
func (n *notifier) ready(status string) {
	n.send(fmt.Sprintf("READY=1\nMAINPID=%d\nSTATUS=%s", os.Getpid(), oneLine(status)))
}

// stopping says the drain has begun.
func (n *notifier) stopping(status string) {
	n.send("STOPPING=1\nSTATUS=" + oneLine(status))
}

// status updates the line the manager shows for the service.
func (n *notifier) status(status string) {
	n.send("STATUS=" + oneLine(status))
}

// send sends msg and logs the first failure.
func (n *notifier) send(msg string) {
	if n.addr == "" {
		return
	}
	if err := sendNotify(n.addr, msg); err != nil {
		n.once.Do(func() {
			n.log.Warn("cannot notify the service manager; the node serves the same, but a Type=notify unit will not see it start or stop (later failures are not logged)",
				zap.String(strings.ToLower(notifySocket), n.addr), zap.Error(err))
		})
	}
}

// sendNotify writes msg as one datagram to the socket addr. Go's net
// package maps a leading '@' to the abstract namespace (a NUL first byte)
// on Linux, as the protocol wants.
func sendNotify(addr, msg string) error {
	if !strings.HasPrefix(addr, "/") && !strings.HasPrefix(addr, "@") {
		return fmt.Errorf("%s=%q is neither an absolute path nor an abstract socket name (@name)", notifySocket, addr)
	}
	c, err := net.DialUnix("unixgram", nil, &net.UnixAddr{Name: addr, Net: "unixgram"})
	if err != nil {
		return fmt.Errorf("cannot reach %s: %w", notifySocket, err)
	}
	defer c.Close()
	if err := c.SetWriteDeadline(time.Now().Add(notifyTimeout)); err != nil {
		return err
	}
	if _, err := c.Write([]byte(msg)); err != nil {
		return fmt.Errorf("cannot write to %s: %w", notifySocket, err)
	}
	return nil
}

// oneLine keeps a STATUS= value on its line: a newline would start a
// new assignment.
func oneLine(s string) string {
	return strings.NewReplacer("\n", " ", "\r", " ").Replace(s)
}
