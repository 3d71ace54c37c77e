package payload

import (
	"math/rand/v2"
	"strconv"
	"time"
)

// Stripe-like events: {"id":"evt_...","object":"event","type":...,
// "data":{"object":{...}},...} around an invoice, a payment intent or a
// customer, with nested objects and a list (invoice lines, charges,
// subscriptions) that grows with the body size.

type stripeObject struct {
	object, prefix string
	types          []string
	members        func(r *rand.Rand, now time.Time, cur string) [][]byte
	listOpen       string
	item           func(dst []byte, r *rand.Rand, now time.Time, cur string) []byte
}

var stripeObjects = []stripeObject{
	{"invoice", "in_", []string{"invoice.paid", "invoice.payment_succeeded", "invoice.finalized", "invoice.payment_failed"},
		invoiceMembers, `,"lines":{"object":"list","data":[`, appendInvoiceLine},
	{"payment_intent", "pi_", []string{"payment_intent.succeeded", "payment_intent.created", "payment_intent.payment_failed"},
		paymentIntentMembers, `,"charges":{"object":"list","data":[`, appendCharge},
	{"customer", "cus_", []string{"customer.created", "customer.updated"},
		customerMembers, `,"subscriptions":{"object":"list","data":[`, appendSubscription},
}

// stripeDoc draws one Stripe-like event.
func stripeDoc(r *rand.Rand, now time.Time) (*sizedDoc, string) {
	o := &stripeObjects[r.IntN(len(stripeObjects))]
	typ := pick(r, o.types)
	cur := pick(r, currencies)
	created := pastTime(r, now)

	h := []byte(`{"id":"evt_`)
	h = appendBase62(h, r, 24-TokenLen)
	slot := len(h)
	h = appendBase62(h, r, TokenLen)
	h = append(h, `","object":"event","api_version":"2024-06-20"`...)
	h = appendIntKV(h, "created", created.Unix())
	h = appendStrKV(h, "type", typ)
	h = append(h, `,"data":{"object":{"id":"`...)
	h = append(h, o.prefix...)
	h = appendBase62(h, r, 14)
	h = append(h, `","object":"`...)
	h = append(h, o.object...)
	h = append(h, '"')

	t := []byte(`}},"livemode":false`)
	t = appendIntKV(t, "pending_webhooks", int64(1+r.IntN(3)))
	t = append(t, `,"request":{"id":"req_`...)
	t = appendBase62(t, r, 14)
	t = append(t, `","idempotency_key":"`...)
	t = appendUUID(t, r)
	t = append(t, `"}}`...)

	var ms [][]byte
	for _, m := range o.members(r, created, cur) {
		if r.IntN(5) > 0 { // vary the shape: drop about one member in five
			ms = append(ms, m)
		}
	}
	return &sizedDoc{
		head: h, tail: t, slot: slot, members: ms,
		listOpen: o.listOpen, listClose: `],"has_more":false}`,
		item:   func(dst []byte, _ int) []byte { return o.item(dst, r, created, cur) },
		padKey: "description",
		filler: func(dst []byte, n int) []byte { return appendWords(dst, r, n) },
	}, typ
}

func invoiceMembers(r *rand.Rand, at time.Time, cur string) [][]byte {
	due := int64(100 * (1 + r.IntN(5000)))
	name, email := personName(r)
	return [][]byte{
		member(func(b []byte) []byte { return appendIntKV(appendIntKV(b, "amount_due", due), "amount_paid", due) }),
		member(func(b []byte) []byte { return appendIntKV(b, "amount_remaining", 0) }),
		member(func(b []byte) []byte { return appendStrKV(b, "currency", cur) }),
		member(func(b []byte) []byte { return appendIDKV(b, r, "customer", "cus_", 14) }),
		member(func(b []byte) []byte {
			return appendStrKV(appendStrKV(b, "customer_email", email), "customer_name", name)
		}),
		member(func(b []byte) []byte { return appendStrKV(b, "status", pick(r, []string{"paid", "open", "draft"})) }),
		member(func(b []byte) []byte { return appendStrKV(b, "billing_reason", "subscription_cycle") }),
		member(func(b []byte) []byte { return appendIntKV(b, "created", at.Unix()) }),
		member(func(b []byte) []byte {
			return appendIntKV(appendIntKV(b, "period_start", at.Unix()-30*86400), "period_end", at.Unix())
		}),
		member(func(b []byte) []byte {
			b = append(appendKV(b, "number"), '"')
			return append(strconv.AppendInt(append(appendBase62(b, r, 8), '-'), int64(r.IntN(9999)), 10), '"')
		}),
		member(func(b []byte) []byte { return appendIDKV(b, r, "subscription", "sub_", 14) }),
		member(func(b []byte) []byte { return appendAddress(appendKV(b, "customer_address"), r) }),
		member(func(b []byte) []byte {
			b = append(appendKV(b, "status_transitions"), `{"finalized_at":`...)
			b = strconv.AppendInt(b, at.Unix()-60, 10)
			b = append(b, `,"paid_at":`...)
			return append(strconv.AppendInt(b, at.Unix(), 10), '}')
		}),
		member(func(b []byte) []byte { return appendMetadata(b, r) }),
	}
}

func paymentIntentMembers(r *rand.Rand, at time.Time, cur string) [][]byte {
	amount := int64(100 * (1 + r.IntN(5000)))
	name, email := personName(r)
	return [][]byte{
		member(func(b []byte) []byte { return appendIntKV(appendIntKV(b, "amount", amount), "amount_received", amount) }),
		member(func(b []byte) []byte { return appendStrKV(b, "currency", cur) }),
		member(func(b []byte) []byte { return appendIDKV(b, r, "customer", "cus_", 14) }),
		member(func(b []byte) []byte { return appendIDKV(b, r, "payment_method", "pm_", 24) }),
		member(func(b []byte) []byte { return appendStrKV(b, "status", pick(r, []string{"succeeded", "processing"})) }),
		member(func(b []byte) []byte {
			return appendStrKV(appendStrKV(b, "capture_method", "automatic"), "confirmation_method", "automatic")
		}),
		member(func(b []byte) []byte { return appendIntKV(b, "created", at.Unix()) }),
		member(func(b []byte) []byte { return appendStrKV(b, "receipt_email", email) }),
		member(func(b []byte) []byte { return append(appendKV(b, "payment_method_types"), `["card"]`...) }),
		member(func(b []byte) []byte {
			b = append(appendKV(b, "shipping"), `{"name":`...)
			b = appendStr(b, name)
			b = append(b, `,"address":`...)
			return append(appendAddress(b, r), '}')
		}),
		member(func(b []byte) []byte { return appendMetadata(b, r) }),
	}
}

func customerMembers(r *rand.Rand, at time.Time, cur string) [][]byte {
	name, email := personName(r)
	return [][]byte{
		member(func(b []byte) []byte { return appendStrKV(appendStrKV(b, "email", email), "name", name) }),
		member(func(b []byte) []byte {
			b = append(appendKV(b, "phone"), `"+1`...)
			return append(strconv.AppendInt(b, 2000000000+r.Int64N(7999999999), 10), '"')
		}),
		member(func(b []byte) []byte { return appendIntKV(b, "created", at.Unix()) }),
		member(func(b []byte) []byte { return appendIntKV(b, "balance", -int64(r.IntN(5000))) }),
		member(func(b []byte) []byte { return appendStrKV(b, "currency", cur) }),
		member(func(b []byte) []byte { return appendBoolKV(b, "delinquent", r.IntN(10) == 0) }),
		member(func(b []byte) []byte { return appendAddress(appendKV(b, "address"), r) }),
		member(func(b []byte) []byte {
			b = append(appendKV(b, "invoice_settings"), `{"default_payment_method":"pm_`...)
			return append(appendBase62(b, r, 24), `","footer":null}`...)
		}),
		member(func(b []byte) []byte { return appendStrKV(b, "tax_exempt", "none") }),
		member(func(b []byte) []byte { return appendMetadata(b, r) }),
	}
}

func appendInvoiceLine(b []byte, r *rand.Rand, at time.Time, cur string) []byte {
	unit := int64(100 * (1 + r.IntN(500)))
	qty := int64(1 + r.IntN(20))
	b = append(b, `{"id":"il_`...)
	b = append(appendBase62(b, r, 24), `","object":"line_item"`...)
	b = appendIntKV(b, "amount", unit*qty)
	b = appendStrKV(b, "currency", cur)
	b = append(appendKV(b, "description"), '"')
	b = append(appendSentence(b, r, 2, 6), '"')
	b = append(b, `,"period":{"start":`...)
	b = strconv.AppendInt(b, at.Unix()-30*86400, 10)
	b = append(b, `,"end":`...)
	b = strconv.AppendInt(b, at.Unix(), 10)
	b = append(b, `},"price":{"id":"price_`...)
	b = append(appendBase62(b, r, 24), `","object":"price"`...)
	b = appendIntKV(b, "unit_amount", unit)
	b = append(b, `,"recurring":{"interval":"`...)
	b = append(b, pick(r, []string{"month", "year", "week"})...)
	b = append(b, `","interval_count":1},"product":"prod_`...)
	b = append(appendBase62(b, r, 14), `"}`...)
	b = appendIntKV(b, "quantity", qty)
	return append(b, `,"type":"subscription"}`...)
}

func appendCharge(b []byte, r *rand.Rand, at time.Time, cur string) []byte {
	name, email := personName(r)
	b = append(b, `{"id":"ch_`...)
	b = append(appendBase62(b, r, 24), `","object":"charge"`...)
	b = appendIntKV(b, "amount", int64(100*(1+r.IntN(5000))))
	b = appendStrKV(b, "currency", cur)
	b = append(b, `,"paid":true,"captured":true`...)
	b = appendIntKV(b, "created", at.Unix())
	b = append(b, `,"outcome":{"network_status":"approved_by_network","risk_level":"normal","risk_score":`...)
	b = strconv.AppendInt(b, int64(r.IntN(100)), 10)
	b = append(b, `,"type":"authorized"},"billing_details":{"email":`...)
	b = appendStr(b, email)
	b = append(b, `,"name":`...)
	b = appendStr(b, name)
	b = append(b, `,"address":`...)
	b = appendAddress(b, r)
	b = append(b, `},"payment_method_details":{"type":"card","card":{"brand":"`...)
	b = append(b, pick(r, []string{"visa", "mastercard", "amex"})...)
	b = append(b, `","last4":"`...)
	b = strconv.AppendInt(b, int64(1000+r.IntN(9000)), 10)
	b = append(b, `","exp_month":`...)
	b = strconv.AppendInt(b, int64(1+r.IntN(12)), 10)
	b = append(b, `,"exp_year":`...)
	b = strconv.AppendInt(b, int64(2027+r.IntN(6)), 10)
	return append(b, `}}}`...)
}

func appendSubscription(b []byte, r *rand.Rand, at time.Time, cur string) []byte {
	b = append(b, `{"id":"sub_`...)
	b = append(appendBase62(b, r, 24), `","object":"subscription"`...)
	b = appendStrKV(b, "status", pick(r, []string{"active", "trialing", "past_due"}))
	b = appendIntKV(b, "current_period_start", at.Unix()-30*86400)
	b = appendIntKV(b, "current_period_end", at.Unix())
	b = append(b, `,"items":{"object":"list","data":[{"id":"si_`...)
	b = append(appendBase62(b, r, 14), `","price":{"id":"price_`...)
	b = append(appendBase62(b, r, 24), '"')
	b = appendIntKV(b, "unit_amount", int64(100*(1+r.IntN(500))))
	b = appendStrKV(b, "currency", cur)
	b = append(b, '}')
	b = appendIntKV(b, "quantity", int64(1+r.IntN(20)))
	return append(b, `}]},"cancel_at_period_end":false}`...)
}

// appendAddress appends a postal address object.
func appendAddress(b []byte, r *rand.Rand) []byte {
	i := r.IntN(len(cities))
	b = append(b, `{"city":`...)
	b = appendStr(b, cities[i])
	b = appendStrKV(b, "country", countries[i])
	b = append(appendKV(b, "line1"), '"')
	b = strconv.AppendInt(b, int64(1+r.IntN(400)), 10)
	b = append(b, ' ')
	b = append(appendSentence(b, r, 1, 2), ` Street"`...)
	b = append(appendKV(b, "postal_code"), '"')
	b = strconv.AppendInt(b, int64(10000+r.IntN(89999)), 10)
	return append(b, `"}`...)
}

// appendMetadata appends a metadata member with a few string values.
func appendMetadata(b []byte, r *rand.Rand) []byte {
	b = append(appendKV(b, "metadata"), `{"order_id":"ord_`...)
	b = append(appendBase62(b, r, 10), '"')
	b = appendStrKV(b, "plan", pick(r, []string{"starter", "pro", "enterprise"}))
	b = appendStrKV(b, "source", pick(r, []string{"web", "ios", "android", "api"}))
	return append(b, '}')
}

// personName draws a name and a matching email address.
func personName(r *rand.Rand) (name, email string) {
	f, l := pick(r, firstNames), pick(r, lastNames)
	return capitalize(f) + " " + capitalize(l), f + "." + l + "@example.com"
}

func capitalize(s string) string { return string(s[0]-('a'-'A')) + s[1:] }
