package lifecycle

import (
	"encoding/json"
	"time"

	"github.com/ankusa/ankusa/meta"
)

// ContentType is the media type of a structured-mode CloudEvent.
const ContentType = "application/cloudevents+json"

// cloudEvent is the JSON form of one event, in the attributes' order.
type cloudEvent struct {
	SpecVersion     string          `json:"specversion"`
	ID              string          `json:"id"`
	Source          string          `json:"source"`
	Type            string          `json:"type"`
	Subject         string          `json:"subject,omitempty"`
	Time            string          `json:"time"`
	Tenant          string          `json:"tenant"`
	DataContentType string          `json:"datacontenttype"`
	Data            json.RawMessage `json:"data"`
}

// Source is the CloudEvents source of the events of node.
func Source(node string) string { return "ankusa://" + node }

// Render is the CloudEvents 1.0 JSON form of ev, as sent by node.
func Render(ev *meta.EventRecord, node string) []byte {
	data := ev.Data
	if len(data) == 0 {
		data = json.RawMessage("null")
	}
	out, err := json.Marshal(cloudEvent{
		SpecVersion: "1.0", ID: ev.ID.String(), Source: Source(node), Type: ev.Type, Subject: ev.Subject,
		Time: ev.Time.UTC().Format(time.RFC3339Nano), Tenant: ev.Tenant, DataContentType: "application/json", Data: data,
	})
	if err != nil {
		panic("BUG: lifecycle: cannot encode an event: " + err.Error())
	}
	return out
}
