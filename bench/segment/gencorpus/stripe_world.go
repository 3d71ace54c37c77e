package main

import (
	"strings"
	"time"
)

// The Stripe side of the world: accounts (one tenant each), their
// customers and products, and the recent payment flows whose events
// follow each other (a payment intent, its charge, its invoice).

type stripeAccount struct {
	tenant     string
	id         string // acct_...
	name       string
	domain     string
	apiVersion string
	live       string // "true" or "false", as JSON
	currency   string
	country    string
	customers  []*customer
	products   []product
	flows      []*flow // recent flows, newest last
}

type customer struct {
	id, name, email, phone string
	city, country, line1   string
	postal                 string
	pm, fingerprint        string
	brand, last4           string
	expMonth, expYear      int64
	sub, invoicePrefix     string
}

type product struct {
	id, name, price, interval string
	amount, created           int64
}

// flow is one payment and the objects its events share.
type flow struct {
	cus            *customer
	pi, ch, in     string
	amount         int64
	createdAt      time.Time
	productIndexes []int
}

var (
	firstNames = splitWords(`ada alan grace linus margaret ken barbara dennis radia edsger
frances john donald leslie tim vint katherine annie hedy mary sophie niklaus guido
anders rob brian bjarne james yukihiro rasmus larry`)
	lastNames = splitWords(`lovelace turing hopper torvalds hamilton thompson liskov ritchie
perlman dijkstra allen mccarthy knuth lamport berners cerf johnson easley lamarr jackson
wilson wirth rossum hejlsberg pike kernighan stroustrup gosling matsumoto lerdorf wall`)
	cities   = splitWords(`Berlin Lisbon Austin Toronto Pune Osaka Nairobi Lyon Denver Leeds Porto Dublin Oslo Lagos Quito`)
	country2 = splitWords(`DE PT US CA IN JP KE FR US GB PT IE NO NG EC`)
	streets  = splitWords(`Main Oak Pine Maple Cedar Elm Market Church High Station Park Lake Hill Mill`)
	brands   = []string{"visa", "mastercard", "amex", "discover"}
	plans    = splitWords(`Starter Basic Pro Team Business Enterprise Growth Scale Premium Plus Seat Storage`)
)

var stripeTenants = []struct{ tenant, name, apiVersion, currency, country string }{
	{"acme-shop", "Acme Shop", "2024-06-20", "usd", "US"},
	{"northwind", "Northwind Traders", "2023-10-16", "usd", "US"},
	{"blauweg", "Blauweg GmbH", "2024-06-20", "eur", "DE"},
	{"kettle-cloud", "Kettle Cloud Ltd", "2022-11-15", "gbp", "GB"},
	{"sakura-apps", "Sakura Apps KK", "2024-04-10", "jpy", "JP"},
	{"mapleworks", "Mapleworks Inc", "2020-08-27", "cad", "CA"},
	{"tejas-labs", "Tejas Labs", "2023-08-16", "inr", "IN"},
	{"portside", "Portside Lda", "2024-06-20", "eur", "PT"},
}

func newStripeAccount(c *ctx, i int) *stripeAccount {
	t := stripeTenants[i]
	a := &stripeAccount{
		tenant: t.tenant, name: t.name, apiVersion: t.apiVersion, currency: t.currency, country: t.country,
		id:     string(c.base62([]byte("acct_"), 16)),
		domain: strings.ReplaceAll(t.tenant, "-", "") + ".example",
		live:   [2]string{"true", "false"}[c.r.IntN(4)/3],
	}
	// Big merchants have many customers, small ones few.
	for range 40 + c.r.IntN(600/(i+1)) {
		a.customers = append(a.customers, newCustomer(c))
	}
	for range 3 + c.r.IntN(8) {
		a.products = append(a.products, product{
			id:       string(c.base62([]byte("prod_"), 14)),
			name:     pick(c, plans) + " " + pick(c, []string{"plan", "seats", "add-on", "tier"}),
			price:    string(c.base62([]byte("price_"), 24)),
			interval: pick(c, []string{"month", "year"}),
			amount:   100 * (5 + c.r.Int64N(300)),
			created:  c.at.Add(-time.Duration(c.r.IntN(700)) * 24 * time.Hour).Unix(),
		})
	}
	return a
}

func newCustomer(c *ctx) *customer {
	first, last := pick(c, firstNames), pick(c, lastNames)
	ci := c.r.IntN(len(cities))
	return &customer{
		id:    string(c.base62([]byte("cus_"), 14)),
		name:  strings.ToUpper(first[:1]) + first[1:] + " " + strings.ToUpper(last[:1]) + last[1:],
		email: first + "." + last + string(appendInt(nil, int64(c.r.IntN(100)))) + "@example.com",
		phone: "+1" + string(appendInt(nil, 2000000000+c.r.Int64N(7999999999))),
		city:  cities[ci], country: country2[ci],
		line1:       string(appendInt(nil, int64(1+c.r.IntN(400)))) + " " + pick(c, streets) + " Street",
		postal:      string(appendInt(nil, int64(10000+c.r.IntN(89999)))),
		pm:          string(c.base62([]byte("pm_"), 24)),
		fingerprint: string(c.base62(nil, 16)),
		brand:       pick(c, brands),
		last4:       string(appendInt(nil, int64(1000+c.r.IntN(9000)))),
		expMonth:    int64(1 + c.r.IntN(12)), expYear: int64(2027 + c.r.IntN(6)),
		sub:           string(c.base62([]byte("sub_"), 24)),
		invoicePrefix: strings.ToUpper(string(c.hex(nil, 8))),
	}
}

// setFlow puts the event on a payment flow: a recent one (its next event)
// half of the time, else a new one.
func (a *stripeAccount) setFlow(c *ctx) *flow {
	if n := len(a.flows); n > 0 && c.r.IntN(2) == 0 {
		fl := a.flows[n-1-c.r.IntN(min(n, 16))]
		c.cus, c.amount = fl.cus, fl.amount
		return fl
	}
	fl := &flow{
		cus: a.customers[c.skewed(len(a.customers))],
		pi:  string(c.base62([]byte("pi_"), 24)), ch: string(c.base62([]byte("ch_"), 24)),
		in: string(c.base62([]byte("in_"), 24)), createdAt: c.at,
	}
	for range 1 + c.r.IntN(3) {
		i := c.skewed(len(a.products))
		fl.productIndexes = append(fl.productIndexes, i)
		fl.amount += a.products[i].amount
	}
	a.flows = append(a.flows, fl)
	if len(a.flows) > 64 {
		a.flows = append(a.flows[:0], a.flows[32:]...)
	}
	c.cus, c.amount = fl.cus, fl.amount
	return fl
}
