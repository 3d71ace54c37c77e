package main

import "time"

// The larger Stripe objects: charges, invoices with their lines,
// subscriptions with their items, checkout sessions.

var charge = obj(
	f("id", objectID), f("object", str("charge")), f("amount", amount), f("amount_captured", amount),
	f("amount_refunded", lit("0")), f("application", lit("null")), f("application_fee", lit("null")),
	f("application_fee_amount", lit("null")), f("balance_transaction", token("txn_", 24)),
	f("billing_details", obj(f("address", address), f("email", cusEmail), f("name", cusName), f("phone", lit("null")))),
	f("calculated_statement_descriptor", sf(func(c *ctx, b []byte) []byte { return append(b, c.acct.tenant...) })),
	f("captured", lit("true")), f("created", unix(time.Minute)), f("currency", currency), f("customer", cusID),
	f("description", maybe(0.4, text(3, 8))), f("destination", lit("null")), f("dispute", lit("null")), f("disputed", lit("false")),
	f("failure_balance_transaction", lit("null")), f("failure_code", lit("null")), f("failure_message", lit("null")),
	f("fraud_details", lit("{}")), f("invoice", maybe(0.4, invoiceID)), f("livemode", acctLive), f("metadata", metadata),
	f("on_behalf_of", lit("null")), f("order", lit("null")),
	f("outcome", obj(f("network_status", str("approved_by_network")), f("reason", lit("null")), f("risk_level", oneOf("normal", "elevated")),
		f("risk_score", num(0, 70)), f("seller_message", str("Payment complete.")), f("type", str("authorized")))),
	f("paid", lit("true")), f("payment_intent", intentID), f("payment_method", cusPM),
	f("payment_method_details", obj(f("card", card), f("type", str("card")))),
	f("receipt_email", maybe(0.5, cusEmail)), f("receipt_number", lit("null")),
	f("receipt_url", sf(func(c *ctx, b []byte) []byte {
		b = append(append(b, "https://pay.stripe.com/receipts/payment/"...), c.acct.id...)
		return append(c.base62(append(b, '/'), 72), "?s=ap"...)
	})),
	f("refunded", lit("false")),
	f("refunds", obj(f("object", str("list")), f("data", lit("[]")), f("has_more", lit("false")), f("total_count", lit("0")),
		f("url", sf(func(c *ctx, b []byte) []byte {
			return append(append(append(b, "/v1/charges/"...), c.object...), "/refunds"...)
		})))),
	f("review", lit("null")), f("shipping", lit("null")), f("source", lit("null")), f("source_transfer", lit("null")),
	f("statement_descriptor", lit("null")), f("statement_descriptor_suffix", lit("null")), f("status", str("succeeded")),
	f("transfer_data", lit("null")), f("transfer_group", lit("null")),
)

var card = obj(
	f("amount_authorized", amount),
	f("brand", sf(func(c *ctx, b []byte) []byte { return append(b, c.cus.brand...) })),
	f("checks", obj(f("address_line1_check", str("pass")), f("address_postal_code_check", str("pass")), f("cvc_check", oneOf("pass", "unchecked")))),
	f("country", sf(func(c *ctx, b []byte) []byte { return append(b, c.cus.country...) })),
	f("exp_month", nf(func(c *ctx) int64 { return c.cus.expMonth })), f("exp_year", nf(func(c *ctx) int64 { return c.cus.expYear })),
	f("extended_authorization", lit(`{"status":"disabled"}`)),
	f("fingerprint", sf(func(c *ctx, b []byte) []byte { return append(b, c.cus.fingerprint...) })),
	f("funding", oneOf("credit", "debit")), f("incremental_authorization", lit(`{"status":"unavailable"}`)),
	f("installments", lit("null")), f("last4", sf(func(c *ctx, b []byte) []byte { return append(b, c.cus.last4...) })),
	f("mandate", lit("null")), f("multicapture", lit(`{"status":"unavailable"}`)),
	f("network", sf(func(c *ctx, b []byte) []byte { return append(b, c.cus.brand...) })), f("network_token", lit(`{"used":false}`)),
	f("overcapture", obj(f("maximum_amount_capturable", amount), f("status", str("unavailable")))),
	f("three_d_secure", lit("null")), f("wallet", maybe(0.2, lit(`{"apple_pay":{"type":"apple_pay"},"dynamic_last4":null,"type":"apple_pay"}`))),
)

var invoice = obj(
	f("id", objectID), f("object", str("invoice")),
	f("account_country", sf(func(c *ctx, b []byte) []byte { return append(b, c.acct.country...) })),
	f("account_name", sf(func(c *ctx, b []byte) []byte { return append(b, c.acct.name...) })),
	f("account_tax_ids", lit("null")), f("amount_due", amount), f("amount_paid", amount), f("amount_remaining", lit("0")),
	f("amount_shipping", lit("0")), f("application", lit("null")), f("attempt_count", num(0, 2)), f("attempted", lit("true")),
	f("auto_advance", chance(0.3)), f("automatic_tax", lit(`{"enabled":false,"liability":null,"status":null}`)),
	f("billing_reason", oneOf("subscription_cycle", "subscription_create", "manual", "subscription_update")),
	f("charge", chargeID), f("collection_method", str("charge_automatically")), f("created", unix(time.Hour)),
	f("currency", currency), f("custom_fields", lit("null")), f("customer", cusID), f("customer_address", address),
	f("customer_email", cusEmail), f("customer_name", cusName), f("customer_phone", lit("null")), f("customer_shipping", lit("null")),
	f("customer_tax_exempt", str("none")), f("customer_tax_ids", lit("[]")), f("default_payment_method", lit("null")),
	f("default_source", lit("null")), f("default_tax_rates", lit("[]")), f("description", lit("null")), f("discount", lit("null")),
	f("discounts", lit("[]")), f("due_date", lit("null")), f("effective_at", unix(time.Hour)), f("ending_balance", lit("0")),
	f("footer", lit("null")), f("from_invoice", lit("null")), f("hosted_invoice_url", invoiceURL("https://invoice.stripe.com/i/", "?s=ap")),
	f("invoice_pdf", invoiceURL("https://pay.stripe.com/invoice/", "/pdf?s=ap")), f("issuer", lit(`{"type":"self"}`)),
	f("last_finalization_error", lit("null")), f("latest_revision", lit("null")),
	f("lines", obj(f("object", str("list")), f("data", fill(invoiceLine)), f("has_more", lit("false")), f("total_count", num(1, 12)),
		f("url", sf(func(c *ctx, b []byte) []byte {
			return append(append(append(b, "/v1/invoices/"...), c.object...), "/lines"...)
		})))),
	f("livemode", acctLive), f("metadata", lit("{}")), f("next_payment_attempt", lit("null")),
	f("number", sf(func(c *ctx, b []byte) []byte {
		return appendInt(append(append(b, c.cus.invoicePrefix...), "-000"...), int64(c.r.IntN(9)))
	})),
	f("on_behalf_of", lit("null")), f("paid", lit("true")), f("paid_out_of_band", lit("false")), f("payment_intent", intentID),
	f("payment_settings", lit(`{"default_mandate":null,"payment_method_options":null,"payment_method_types":null}`)),
	f("period_end", unix(0)), f("period_start", unix(31*24*time.Hour)), f("post_payment_credit_notes_amount", lit("0")),
	f("pre_payment_credit_notes_amount", lit("0")), f("quote", lit("null")), f("receipt_number", lit("null")), f("rendering", lit("null")),
	f("shipping_cost", lit("null")), f("shipping_details", lit("null")), f("starting_balance", lit("0")), f("statement_descriptor", lit("null")),
	f("status", oneOf("paid", "open", "draft")),
	f("status_transitions", obj(f("finalized_at", unix(time.Hour)), f("marked_uncollectible_at", lit("null")), f("paid_at", unix(time.Minute)), f("voided_at", lit("null")))),
	f("subscription", subID), f("subscription_details", lit(`{"metadata":{}}`)), f("subtotal", amount), f("subtotal_excluding_tax", amount),
	f("tax", lit("null")), f("test_clock", lit("null")), f("total", amount), f("total_discount_amounts", lit("[]")),
	f("total_excluding_tax", amount), f("total_tax_amounts", lit("[]")), f("transfer_data", lit("null")), f("webhooks_delivered_at", unix(time.Minute)),
)

func invoiceURL(prefix, suffix string) gen {
	return sf(func(c *ctx, b []byte) []byte {
		b = append(append(append(b, prefix...), c.acct.id...), "/test_"...)
		return append(c.base62(b, 120), suffix...)
	})
}

var invoiceLine = obj(
	f("id", token("il_", 24)), f("object", str("line_item")), f("amount", num(500, 30000)), f("amount_excluding_tax", num(500, 30000)),
	f("currency", currency), f("description", sf(func(c *ctx, b []byte) []byte {
		p := pick(c, c.acct.products)
		return append(append(append(b, "1 × "...), p.name...), " (at per "+p.interval+")"...)
	})),
	f("discount_amounts", lit("[]")), f("discountable", lit("true")), f("discounts", lit("[]")), f("livemode", acctLive),
	f("metadata", lit("{}")), f("period", obj(f("end", unix(0)), f("start", unix(31*24*time.Hour)))),
	f("price", price), f("proration", chance(0.1)), f("proration_details", lit(`{"credited_items":null}`)), f("quantity", num(1, 5)),
	f("subscription", subID), f("subscription_item", token("si_", 14)), f("tax_amounts", lit("[]")), f("tax_rates", lit("[]")),
	f("type", str("subscription")), f("unit_amount_excluding_tax", sf(func(c *ctx, b []byte) []byte { return appendInt(b, 100*(5+c.r.Int64N(300))) })),
)

var subscription = obj(
	f("id", subID), f("object", str("subscription")), f("application", lit("null")), f("application_fee_percent", lit("null")),
	f("automatic_tax", lit(`{"enabled":false,"liability":null}`)), f("billing_cycle_anchor", unix(200*24*time.Hour)),
	f("billing_thresholds", lit("null")), f("cancel_at", lit("null")), f("cancel_at_period_end", chance(0.1)), f("canceled_at", lit("null")),
	f("cancellation_details", lit(`{"comment":null,"feedback":null,"reason":null}`)), f("collection_method", str("charge_automatically")),
	f("created", unix(200*24*time.Hour)), f("currency", currency), f("current_period_end", unix(0)),
	f("current_period_start", unix(31*24*time.Hour)), f("customer", cusID), f("days_until_due", lit("null")),
	f("default_payment_method", cusPM), f("default_source", lit("null")), f("default_tax_rates", lit("[]")), f("description", lit("null")),
	f("discount", lit("null")), f("discounts", lit("[]")), f("ended_at", lit("null")),
	f("invoice_settings", lit(`{"account_tax_ids":null,"issuer":{"type":"self"}}`)),
	f("items", obj(f("object", str("list")), f("data", fill(obj(
		f("id", token("si_", 14)), f("object", str("subscription_item")), f("billing_thresholds", lit("null")), f("created", unix(200*24*time.Hour)),
		f("discounts", lit("[]")), f("metadata", lit("{}")), f("price", price), f("quantity", num(1, 20)), f("subscription", subID), f("tax_rates", lit("[]"))))),
		f("has_more", lit("false")), f("total_count", num(1, 4)),
		f("url", sf(func(c *ctx, b []byte) []byte {
			return append(append(b, "/v1/subscription_items?subscription="...), c.cus.sub...)
		})))),
	f("latest_invoice", invoiceID), f("livemode", acctLive), f("metadata", metadata), f("next_pending_invoice_item_invoice", lit("null")),
	f("on_behalf_of", lit("null")), f("pause_collection", lit("null")),
	f("payment_settings", lit(`{"payment_method_options":null,"payment_method_types":null,"save_default_payment_method":"off"}`)),
	f("pending_invoice_item_interval", lit("null")), f("pending_setup_intent", lit("null")), f("pending_update", lit("null")),
	f("quantity", num(1, 20)), f("schedule", lit("null")), f("start_date", unix(200*24*time.Hour)),
	f("status", oneOf("active", "trialing", "past_due", "canceled")), f("test_clock", lit("null")), f("transfer_data", lit("null")),
	f("trial_end", lit("null")), f("trial_settings", lit(`{"end_behavior":{"missing_payment_method":"create_invoice"}}`)), f("trial_start", lit("null")),
)

var checkoutSession = obj(
	f("id", token("cs_live_", 58)), f("object", str("checkout.session")), f("after_expiration", lit("null")),
	f("allow_promotion_codes", chance(0.3)), f("amount_subtotal", amount), f("amount_total", amount),
	f("automatic_tax", lit(`{"enabled":false,"liability":null,"status":null}`)), f("billing_address_collection", lit("null")),
	f("cancel_url", sf(func(c *ctx, b []byte) []byte {
		return append(append(append(b, "https://"...), c.acct.domain...), "/cart"...)
	})),
	f("client_reference_id", maybe(0.3, token("", 12))), f("consent", lit("null")), f("consent_collection", lit("null")),
	f("created", unix(10*time.Minute)), f("currency", currency), f("custom_fields", lit("[]")),
	f("custom_text", lit(`{"after_submit":null,"shipping_address":null,"submit":null,"terms_of_service_acceptance":null}`)),
	f("customer", cusID), f("customer_creation", str("if_required")),
	f("customer_details", obj(f("address", address), f("email", cusEmail), f("name", cusName), f("phone", lit("null")),
		f("tax_exempt", str("none")), f("tax_ids", lit("[]")))),
	f("customer_email", lit("null")), f("expires_at", unix(0)), f("invoice", lit("null")),
	f("invoice_creation", lit(`{"enabled":false,"invoice_data":{"account_tax_ids":null,"custom_fields":null,"description":null,"footer":null,"issuer":null,"metadata":{},"rendering_options":null}}`)),
	f("livemode", acctLive), f("locale", lit("null")), f("metadata", metadata), f("mode", oneOf("payment", "subscription")),
	f("payment_intent", intentID), f("payment_link", lit("null")), f("payment_method_collection", str("always")),
	f("payment_method_configuration_details", lit("null")), f("payment_method_options", lit(`{"card":{"request_three_d_secure":"automatic"}}`)),
	f("payment_method_types", lit(`["card"]`)), f("payment_status", str("paid")), f("phone_number_collection", lit(`{"enabled":false}`)),
	f("recovered_from", lit("null")), f("saved_payment_method_options", lit("null")), f("setup_intent", lit("null")),
	f("shipping_address_collection", lit("null")), f("shipping_cost", lit("null")), f("shipping_details", lit("null")),
	f("shipping_options", lit("[]")), f("status", str("complete")), f("submit_type", lit("null")), f("subscription", lit("null")),
	f("success_url", sf(func(c *ctx, b []byte) []byte {
		return append(append(append(b, "https://"...), c.acct.domain...), "/success?session_id={CHECKOUT_SESSION_ID}"...)
	})),
	f("total_details", lit(`{"amount_discount":0,"amount_shipping":0,"amount_tax":0}`)), f("ui_mode", str("hosted")), f("url", lit("null")),
)
