package main

import "time"

// Stripe events: the event wrapper around a data.object drawn from the
// account's entities. Shapes follow Stripe's API reference (API versions
// 2020-08-27 to 2024-06-20): every member present, null when unset.

type stripeKind struct {
	weight int
	types  []string
	object gen
}

var stripeKinds = []stripeKind{
	{24, []string{"payment_intent.succeeded", "payment_intent.created", "payment_intent.payment_failed"}, paymentIntent},
	{16, []string{"charge.succeeded", "charge.captured", "charge.refunded"}, charge},
	{20, []string{"invoice.paid", "invoice.payment_succeeded", "invoice.finalized", "invoice.created"}, invoice},
	{11, []string{"customer.subscription.updated", "customer.subscription.created"}, subscription},
	{9, []string{"customer.updated", "customer.created"}, customerObj},
	{6, []string{"checkout.session.completed"}, checkoutSession},
	{6, []string{"balance.available"}, balance},
	{2, []string{"payout.paid", "payout.created"}, payout},
}

// stripeEvent draws one event of a: its type and the template of its
// body.
func stripeEvent(c *ctx, a *stripeAccount) (string, gen) {
	c.acct = a
	k, i := weighted(c, stripeKinds, func(k stripeKind) int { return k.weight })
	typ := pick(c, k.types)
	fl := a.setFlow(c)
	c.flow = fl
	c.object = [...]string{fl.pi, fl.ch, fl.in}[min(i, 2)]
	event := obj(
		f("id", token("evt_", 24)),
		f("object", str("event")),
		f("api_version", sf(func(c *ctx, b []byte) []byte { return append(b, c.acct.apiVersion...) })),
		f("created", unix(0)),
		f("data", obj(f("object", k.object))),
		f("livemode", acctLive),
		f("pending_webhooks", num(1, 3)),
		f("request", obj(f("id", maybe(0.6, token("req_", 14))), f("idempotency_key", maybe(0.5, sf(func(c *ctx, b []byte) []byte { return c.uuid(b) }))))),
		f("type", str(typ)),
	)
	return typ, event
}

// Members that read the event's entities.
var (
	acctLive  gen = func(c *ctx, b []byte) []byte { return append(b, c.acct.live...) }
	currency      = sf(func(c *ctx, b []byte) []byte { return append(b, c.acct.currency...) })
	objectID      = sf(func(c *ctx, b []byte) []byte { return append(b, c.object...) })
	chargeID      = sf(func(c *ctx, b []byte) []byte { return append(b, c.flow.ch...) })
	intentID      = sf(func(c *ctx, b []byte) []byte { return append(b, c.flow.pi...) })
	invoiceID     = sf(func(c *ctx, b []byte) []byte { return append(b, c.flow.in...) })
	cusID         = sf(func(c *ctx, b []byte) []byte { return append(b, c.cus.id...) })
	cusEmail      = sf(func(c *ctx, b []byte) []byte { return append(b, c.cus.email...) })
	cusName       = sf(func(c *ctx, b []byte) []byte { return append(b, c.cus.name...) })
	cusPM         = sf(func(c *ctx, b []byte) []byte { return append(b, c.cus.pm...) })
	subID         = sf(func(c *ctx, b []byte) []byte { return append(b, c.cus.sub...) })
	amount        = nf(func(c *ctx) int64 { return c.amount })
	address       = obj(
		f("city", sf(func(c *ctx, b []byte) []byte { return append(b, c.cus.city...) })),
		f("country", sf(func(c *ctx, b []byte) []byte { return append(b, c.cus.country...) })),
		f("line1", sf(func(c *ctx, b []byte) []byte { return append(b, c.cus.line1...) })),
		f("line2", lit("null")),
		f("postal_code", sf(func(c *ctx, b []byte) []byte { return append(b, c.cus.postal...) })),
		f("state", lit("null")))
	metadata = func(c *ctx, b []byte) []byte {
		if c.r.IntN(3) == 0 {
			return append(b, "{}"...)
		}
		return obj(f("order_id", token("ord_", 10)), f("plan", oneOf("starter", "pro", "enterprise")),
			f("source", oneOf("web", "ios", "android", "api")))(c, b)
	}
	price = func(c *ctx, b []byte) []byte {
		p := pick(c, c.acct.products)
		return obj(
			f("id", str(p.price)), f("object", str("price")), f("active", lit("true")),
			f("billing_scheme", str("per_unit")), f("created", lit(string(appendInt(nil, p.created)))),
			f("currency", currency), f("custom_unit_amount", lit("null")), f("livemode", acctLive),
			f("lookup_key", lit("null")), f("metadata", lit("{}")), f("nickname", maybe(0.3, str(p.name))),
			f("product", str(p.id)),
			f("recurring", obj(f("aggregate_usage", lit("null")), f("interval", str(p.interval)),
				f("interval_count", lit("1")), f("trial_period_days", lit("null")), f("usage_type", str("licensed")))),
			f("tax_behavior", str("unspecified")), f("tiers_mode", lit("null")), f("transform_quantity", lit("null")),
			f("type", str("recurring")), f("unit_amount", lit(string(appendInt(nil, p.amount)))),
			f("unit_amount_decimal", str(string(appendInt(nil, p.amount)))),
		)(c, b)
	}
)

var paymentIntent = obj(
	f("id", objectID), f("object", str("payment_intent")), f("amount", amount),
	f("amount_capturable", lit("0")), f("amount_details", lit(`{"tip":{}}`)), f("amount_received", amount),
	f("application", lit("null")), f("application_fee_amount", lit("null")),
	f("automatic_payment_methods", maybe(0.5, lit(`{"allow_redirects":"always","enabled":true}`))),
	f("canceled_at", lit("null")), f("cancellation_reason", lit("null")), f("capture_method", oneOf("automatic", "automatic_async", "manual")),
	f("client_secret", sf(func(c *ctx, b []byte) []byte { return c.base62(append(append(b, c.object...), "_secret_"...), 25) })),
	f("confirmation_method", str("automatic")), f("created", unix(time.Minute)), f("currency", currency),
	f("customer", cusID), f("description", maybe(0.4, text(3, 8))), f("invoice", maybe(0.4, invoiceID)),
	f("last_payment_error", lit("null")), f("latest_charge", chargeID), f("livemode", acctLive),
	f("metadata", metadata), f("next_action", lit("null")), f("on_behalf_of", lit("null")),
	f("payment_method", cusPM), f("payment_method_configuration_details", lit("null")),
	f("payment_method_options", lit(`{"card":{"installments":null,"mandate_options":null,"network":null,"request_three_d_secure":"automatic"}}`)),
	f("payment_method_types", lit(`["card"]`)), f("processing", lit("null")), f("receipt_email", maybe(0.5, cusEmail)),
	f("review", lit("null")), f("setup_future_usage", maybe(0.3, str("off_session"))),
	f("shipping", maybe(0.3, obj(f("address", address), f("carrier", lit("null")), f("name", cusName), f("phone", lit("null")), f("tracking_number", lit("null"))))),
	f("source", lit("null")), f("statement_descriptor", lit("null")), f("statement_descriptor_suffix", lit("null")),
	f("status", oneOf("succeeded", "requires_payment_method", "processing")), f("transfer_data", lit("null")), f("transfer_group", lit("null")),
)

var customerObj = obj(
	f("id", cusID), f("object", str("customer")), f("address", address), f("balance", lit("0")),
	f("created", unix(400*24*time.Hour)), f("currency", currency), f("default_source", lit("null")),
	f("delinquent", chance(0.05)), f("description", maybe(0.2, text(2, 6))), f("discount", lit("null")), f("email", cusEmail),
	f("invoice_prefix", sf(func(c *ctx, b []byte) []byte { return append(b, c.cus.invoicePrefix...) })),
	f("invoice_settings", obj(f("custom_fields", lit("null")), f("default_payment_method", cusPM), f("footer", lit("null")), f("rendering_options", lit("null")))),
	f("livemode", acctLive), f("metadata", metadata), f("name", cusName), f("next_invoice_sequence", num(1, 40)),
	f("phone", maybe(0.5, sf(func(c *ctx, b []byte) []byte { return append(b, c.cus.phone...) }))),
	f("preferred_locales", oneRaw("[]", `["en"]`)), f("shipping", lit("null")), f("tax_exempt", str("none")), f("test_clock", lit("null")),
)

var balance = obj(
	f("object", str("balance")),
	f("available", arr(1, 2, obj(f("amount", num(0, 5e7)), f("currency", currency), f("source_types", obj(f("card", num(0, 5e7))))))),
	f("connect_reserved", arr(1, 1, obj(f("amount", lit("0")), f("currency", currency)))),
	f("livemode", acctLive),
	f("pending", arr(1, 2, obj(f("amount", num(0, 5e6)), f("currency", currency), f("source_types", obj(f("card", num(0, 5e6))))))),
)

var payout = obj(
	f("id", token("po_", 24)), f("object", str("payout")), f("amount", num(1e4, 5e7)), f("arrival_date", unix(0)),
	f("automatic", lit("true")), f("balance_transaction", token("txn_", 24)), f("created", unix(time.Hour)), f("currency", currency),
	f("description", str("STRIPE PAYOUT")), f("destination", token("ba_", 24)), f("failure_balance_transaction", lit("null")),
	f("failure_code", lit("null")), f("failure_message", lit("null")), f("livemode", acctLive), f("metadata", lit("{}")),
	f("method", str("standard")), f("original_payout", lit("null")), f("reconciliation_status", oneOf("completed", "not_applicable")),
	f("reversed_by", lit("null")), f("source_type", str("card")), f("statement_descriptor", lit("null")), f("status", oneOf("paid", "pending")),
	f("type", str("bank_account")),
)
