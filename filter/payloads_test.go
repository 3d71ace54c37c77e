package filter

import "github.com/ankusa/ankusa/envelope"

// Hooks as the providers send them, trimmed to the fields the tests read
// (Stripe's event object, GitHub's push and pull_request payloads,
// Shopify's orders/create), with the headers each sends.

func stripeHook(typ string, amount int) *envelope.Envelope {
	body := `{"id":"evt_1Q","object":"event","api_version":"2024-06-20","type":"` + typ + `",` +
		`"data":{"object":{"id":"ch_3Q","object":"charge","amount":` + itoa(amount) + `,"currency":"usd","paid":true,` +
		`"metadata":{"order":"A-17"}}},"livemode":false}`
	return &envelope.Envelope{
		TenantID: "acme", SourceID: "stripe", EventType: typ,
		RouteParams: []envelope.Param{{Key: "app", Value: "billing"}},
		Headers: []envelope.Header{
			{Name: "Content-Type", Value: "application/json; charset=utf-8"},
			{Name: "Stripe-Signature", Value: "t=1733400000,v1=5257a869e7ecebeda32affa62cdca3fa51cad7e77a0e56ff536d0ce8e108d8bd"},
			{Name: "User-Agent", Value: "Stripe/1.0 (+https://stripe.com/docs/webhooks)"},
		},
		Body: []byte(body),
	}
}

func githubHook(event, action string) *envelope.Envelope {
	body := `{"ref":"refs/heads/main","repository":{"full_name":"acme/api","private":true},"sender":{"login":"octocat"}}`
	if action != "" {
		body = `{"action":"` + action + `","number":42,"pull_request":{"title":"Fix","draft":false,"labels":[{"name":"bug"}]},"repository":{"full_name":"acme/api"}}`
	}
	return &envelope.Envelope{
		TenantID: "globex", SourceID: "github", EventType: event,
		RouteParams: []envelope.Param{{Key: "app", Value: "ci"}},
		Headers: []envelope.Header{
			{Name: "X-GitHub-Event", Value: event},
			{Name: "X-GitHub-Delivery", Value: "72d3162e-cc78-11e3-81ab-4c9367dc0958"},
			{Name: "X-Hub-Signature-256", Value: "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17"},
			{Name: "Content-Type", Value: "application/json"},
		},
		Body: []byte(body),
	}
}

func shopifyHook(topic string) *envelope.Envelope {
	return &envelope.Envelope{
		TenantID: "initech", SourceID: "shopify", EventType: topic,
		Headers: []envelope.Header{
			{Name: "X-Shopify-Topic", Value: topic},
			{Name: "X-Shopify-Hmac-Sha256", Value: "XWmrwMey6OsLMeiZKwP4FppHH3cmAiiJJAweH5Jo4bM="},
			{Name: "X-Shopify-Shop-Domain", Value: "initech.myshopify.com"},
			{Name: "X-Shopify-Webhook-Id", Value: "b54557e4-bdd9-4b37-8a5f-bf7d70bcd043"},
		},
		Body: []byte(`{"id":820982911946154508,"email":"jon@example.com","total_price":"403.00","currency":"USD",` +
			`"line_items":[{"sku":"IPOD2008PINK","quantity":1},{"sku":"IPOD2008BLACK","quantity":2}]}`),
	}
}

func itoa(n int) string {
	if n == 0 {
		return "0"
	}
	var b []byte
	for ; n > 0; n /= 10 {
		b = append([]byte{byte('0' + n%10)}, b...)
	}
	return string(b)
}
