package main

// Prose for issue and comment bodies, commit messages and descriptions:
// words drawn by a Zipf law over a vocabulary of a few hundred, in
// sentences and paragraphs, with some inline code, paths and numbers, as
// JSON string content (no quotes; line breaks as \r\n escapes, the way
// GitHub sends bodies typed in a browser).

var vocabulary = splitWords(`the to a of and in is it for that this on with be not
we when as if are can from but or should so have at an by after was i there before
error request webhook event retry timeout fails test build release version fix update
add remove support config user api service payment invoice customer order issue bug
change new need would only still just also all some more than then which should
because while about into out up down now please see like looks expected actual
behavior steps reproduce happens seems instead default option flag value field
response status code body header token key secret signature delivery queue worker
database query index migration schema table column row cache memory disk file path
log logs message line stack trace panic crash restart deploy production staging
local branch commit merge review approve pull main master tag docs readme example
run runs running ran works working broken flaky slow fast latency throughput load
client server connection socket http https json yaml parse parser encode decode
read write sync async lock thread goroutine channel context cancel deadline limit
rate quota plan subscription trial upgrade downgrade refund charge dispute payout
account team org member admin owner permission role access auth login session
email phone address country currency amount total price product item cart checkout
week month year day hour minute second time date timezone utc first last next
previous same different other another each every any both few many most several
thanks thank hi hello sorry maybe probably actually already again yet always never
sometimes often here where why what how who think know try tried trying use used
using make made get got set sets show shows shown happen happened note noted found
`)

func splitWords(s string) []string {
	var out []string
	start := -1
	for i := 0; i <= len(s); i++ {
		if i == len(s) || s[i] == ' ' || s[i] == '\n' {
			if start >= 0 {
				out = append(out, s[start:i])
				start = -1
			}
		} else if start < 0 {
			start = i
		}
	}
	return out
}

var codeBits = []string{
	"`retry_count`", "`nil`", "`context.Canceled`", "`500`", "`POST /v1/events`",
	"`config.yaml`", "`--verbose`", "`ECONNRESET`", "`429 Too Many Requests`",
	"`src/handlers/webhook.ts`", "`internal/queue/worker.go:142`", "`TypeError: undefined`",
}

// prose appends n words of text.
func (c *ctx) prose(b []byte, n int) []byte {
	sentence := 0
	for i := range n {
		switch {
		case i == 0:
		case sentence > 5 && c.r.IntN(6) == 0:
			b = append(b, '.')
			if c.r.IntN(4) == 0 {
				b = append(b, `\r\n\r\n`...)
			} else {
				b = append(b, ' ')
			}
			sentence = 0
		case c.r.IntN(14) == 0:
			b = append(b, ", "...)
		default:
			b = append(b, ' ')
		}
		switch k := c.r.IntN(40); {
		case k == 0:
			b = append(b, pick(c, codeBits)...)
		case k == 1:
			b = appendInt(b, int64(c.r.IntN(5000)))
		default:
			w := vocabulary[c.zipf.Uint64()]
			if sentence == 0 && w[0] >= 'a' && w[0] <= 'z' {
				b = append(append(b, w[0]-('a'-'A')), w[1:]...)
			} else {
				b = append(b, w...)
			}
		}
		sentence++
	}
	return append(b, '.')
}
