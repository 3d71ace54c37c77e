// Package gateway is the single-tenant gateway as a config: ankusa.yaml
// and README.md. Its test runs the stock binary on that file.
package gateway

// TestEndToEnd serves the example's own ankusa.yaml with the stock binary
// (its listen addresses, the backend's address and the broker's URL
// replaced by the test's) and sends hooks as GitHub and Stripe sign them:
// each is a 201, reaches the backend signed with the backend's secret,
// stripe's reaches RabbitMQ too, a redelivery is a 200 with the first id,
// a bad signature is a 401, and the bootstrap token reads a hook back.

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/ankusa/ankusa/examples/internal/exampletest"
	"github.com/ankusa/ankusa/internal/rabbittest"
)

const (
	githubSecret  = "gh-example-secret-2b7e151628aed2a6"
	stripeSecret  = "whsec_exampleStripeSecretForTheGatewayTest"
	backendSecret = "whsec_Z2F0ZXdheS1iYWNrZW5kLXNpZ25pbmcta2V5LTEyMw=="
	// wait bounds one delivery: a first attempt is immediate, so this is
	// slack for two busy cores, not a retry budget.
	wait = 10 * time.Second
)

type gateway struct {
	node  *exampletest.Node
	hc    *http.Client
	token string // the bootstrap admin token
	recv  *exampletest.Receiver
}

func TestEndToEnd(t *testing.T) {
	bin := exampletest.Build(t)
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "secrets"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "secrets", "stripe-webhook-secret"), []byte(stripeSecret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	broker := rabbittest.New(t)
	broker.DeclareExchange("webhooks", "topic")
	queue := broker.Queue(nil, "webhooks", "stripe.#")
	fromBroker, _ := broker.Consume(queue, 10, true)

	g := &gateway{hc: &http.Client{Timeout: 10 * time.Second}, recv: exampletest.NewReceiver(t)}
	t.Cleanup(g.hc.CloseIdleConnections)
	listen, admin := exampletest.FreeAddr(t), exampletest.FreeAddr(t)
	cfg := exampletest.WriteConfig(t, "ankusa.yaml", dir,
		[2]string{"\nlisten: 127.0.0.1:8080", "\nlisten: " + listen},
		[2]string{"\n  listen: 127.0.0.1:9090", "\n  listen: " + admin},
		[2]string{"http://127.0.0.1:8000/", g.recv.URL + "/"},
		[2]string{"amqp://guest:guest@127.0.0.1:5672/", rabbittest.URL()},
		[2]string{"level: info", "level: warn"},
	)
	g.node = exampletest.Start(t, bin, dir, cfg, listen, admin,
		"GITHUB_WEBHOOK_SECRET="+githubSecret, "BACKEND_WEBHOOK_SECRET="+backendSecret)
	tok, err := os.ReadFile(filepath.Join(dir, "data", "admin-token"))
	if err != nil {
		t.Fatalf("the bootstrap token's file: %v", err)
	}
	g.token = strings.TrimSpace(string(tok))

	// GitHub: a push, signed with the webhook's secret.
	push := []byte(`{"ref":"refs/heads/main","repository":{"full_name":"acme/api"}}`)
	delivery := "72d3162e-cc78-11e3-81ab-4c9367dc0958"
	ghID := g.created(t, "a signed GitHub push", g.github(push, delivery, exampletest.GitHub(githubSecret, push)))
	g.delivered(t, "the GitHub push", ghID, "/hooks/github", push, "push")
	again := g.post(t, g.github(push, delivery, exampletest.GitHub(githubSecret, push)))
	if again.Status != http.StatusOK || eventID(t, again) != ghID || !strings.Contains(string(again.Body), `"duplicate":true`) {
		t.Fatalf("GitHub's redelivery of %s: %s, want 200 with the first id %s, duplicate", delivery, again, ghID)
	}
	g.refused(t, "a push signed with another secret", g.github(push, "d2", exampletest.GitHub("not-the-secret", push)))
	g.refused(t, "an unsigned push", g.github(push, "d3", ""))
	g.refused(t, "a push whose body is not the one signed", g.github([]byte(`{"ref":"refs/heads/evil"}`), "d4", exampletest.GitHub(githubSecret, push)))

	// Stripe: an event, signed now with the endpoint's secret (read from
	// the file), to the backend and to RabbitMQ.
	invoice := []byte(`{"id":"evt_1QexampleGateway","type":"invoice.paid","data":{"object":{"amount_paid":4200}}}`)
	stID := g.created(t, "a signed Stripe event", g.stripe(invoice, exampletest.Stripe(stripeSecret, time.Now(), invoice)))
	g.delivered(t, "the Stripe event", stID, "/hooks/stripe", invoice, "invoice.paid")
	g.published(t, fromBroker, stID, invoice)
	g.refused(t, "a Stripe event signed 10 minutes ago", g.stripe(invoice, exampletest.Stripe(stripeSecret, time.Now().Add(-10*time.Minute), invoice)))
	g.refused(t, "a Stripe event signed with another secret", g.stripe(invoice, exampletest.Stripe("whsec_other", time.Now(), invoice)))

	// The operator reads a hook back with the bootstrap token.
	var h exampletest.Hook
	a := g.admin(t, "/v1/tenants/default/hooks/"+stID, g.token)
	if a.Status != http.StatusOK {
		t.Fatalf("GET hook %s with the bootstrap token: %s", stID, a)
	}
	if err := json.Unmarshal(a.Body, &h); err != nil {
		t.Fatal(err)
	}
	if h.ID != stID || h.TenantID != "default" || h.SourceID != "stripe" || h.Body != string(invoice) || !h.Verification.Verified || h.Verification.Verifier != "stripe" {
		t.Fatalf("hook %s reads back as %s, want source stripe verified by stripe with the body sent", stID, a.Body)
	}
	if a := g.admin(t, "/v1/tenants/default/hooks/"+stID, "not-the-token"); a.Status != http.StatusUnauthorized {
		t.Fatalf("GET hook with a wrong token: %s, want 401", a)
	}
	g.node.Stop(t)
}

func (g *gateway) github(body []byte, delivery, sig string) *http.Request {
	req := g.request("github", body)
	req.Header.Set("X-GitHub-Event", "push")
	req.Header.Set("X-GitHub-Delivery", delivery)
	if sig != "" {
		req.Header.Set("X-Hub-Signature-256", sig)
	}
	return req
}

func (g *gateway) stripe(body []byte, sig string) *http.Request {
	req := g.request("stripe", body)
	req.Header.Set("Stripe-Signature", sig)
	return req
}

func (g *gateway) request(source string, body []byte) *http.Request {
	req, err := http.NewRequest(http.MethodPost, "http://"+g.node.Listen+"/webhooks/"+source, strings.NewReader(string(body)))
	if err != nil {
		panic(err)
	}
	req.Header.Set("Content-Type", "application/json")
	return req
}

func (g *gateway) post(t *testing.T, req *http.Request) *exampletest.Answer {
	t.Helper()
	return exampletest.Do(t, g.hc, req)
}

// created posts req, requires 201 and returns the hook's id.
func (g *gateway) created(t *testing.T, what string, req *http.Request) string {
	t.Helper()
	a := g.post(t, req)
	if a.Status != http.StatusCreated {
		t.Fatalf("%s: %s, want 201", what, a)
	}
	return eventID(t, a)
}

func (g *gateway) refused(t *testing.T, what string, req *http.Request) {
	t.Helper()
	if a := g.post(t, req); a.Status != http.StatusUnauthorized {
		t.Fatalf("%s: %s, want 401", what, a)
	}
}

// delivered waits for the backend to receive hook id at path: the body as
// sent, the event type and a valid Standard Webhooks signature made with
// the backend's secret.
func (g *gateway) delivered(t *testing.T, what, id, path string, body []byte, eventType string) {
	t.Helper()
	r := g.recv.Wait(t, what, wait, func(r exampletest.Received) bool { return r.Header.Get("X-Ankusa-Event-Id") == id })
	if r.Path != path || string(r.Body) != string(body) || r.Header.Get("X-Ankusa-Event-Type") != eventType ||
		r.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("%s reached the backend at %s with type %q, content type %q and body %s; want %s, %q, application/json, %s",
			what, r.Path, r.Header.Get("X-Ankusa-Event-Type"), r.Header.Get("Content-Type"), r.Body, path, eventType, body)
	}
	if !exampletest.StandardWebhooks(backendSecret, r.Header.Get("Webhook-Id"), r.Header.Get("Webhook-Timestamp"), r.Body, r.Header.Get("Webhook-Signature")) {
		t.Fatalf("%s: the delivery's signature %q does not check with the backend's secret", what, r.Header.Get("Webhook-Signature"))
	}
}

// published waits for hook id on the queue bound to the webhooks exchange:
// routing key stripe.<id>, the hook's JSON form with the body sent.
func (g *gateway) published(t *testing.T, from <-chan amqp.Delivery, id string, body []byte) {
	t.Helper()
	timeout := time.After(wait)
	for {
		select {
		case d, ok := <-from:
			if !ok {
				t.Fatal("the broker's consumer ended")
			}
			if d.RoutingKey != "stripe."+id {
				continue
			}
			var env exampletest.Hook
			if err := json.Unmarshal(d.Body, &env); err != nil {
				t.Fatalf("the message of %s is not JSON: %v\n%s", id, err, d.Body)
			}
			if env.ID != id || env.SourceID != "stripe" || env.Body != string(body) || env.BodyEncoding != "utf8" || !env.Verification.Verified {
				t.Fatalf("the message of %s: %s; want its id, source stripe and the body sent", id, d.Body)
			}
			return
		case <-timeout:
			t.Fatalf("hook %s did not reach RabbitMQ within %s:\n%s", id, wait, g.node.Output())
		}
	}
}

func (g *gateway) admin(t *testing.T, path, token string) *exampletest.Answer {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, "http://"+g.node.Admin+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	return exampletest.Do(t, g.hc, req)
}

func eventID(t *testing.T, a *exampletest.Answer) string {
	t.Helper()
	var v struct{ ID string }
	if err := json.Unmarshal(a.Body, &v); err != nil || !strings.HasPrefix(v.ID, "evt_") {
		t.Fatalf("answer %s: no evt_ id (%v)", a, err)
	}
	return v.ID
}
