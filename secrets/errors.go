package secrets

// Reason says why Open refused a blob.
type Reason string

const (
	// ReasonFormat: the blob is shorter than Overhead or its version byte
	// is not 0x01; it is not a sealed blob of this format.
	ReasonFormat Reason = "format"
	// ReasonNoKey: the blob's key id is neither secrets.kek's nor
	// secrets.kek_previous's; the key that sealed it is not configured.
	ReasonNoKey Reason = "no_key"
	// ReasonAuth: the key id matches a configured key but GCM
	// authentication fails: the blob was sealed for another tenant, source
	// or field, was changed, or was sealed by another key sharing the id.
	ReasonAuth Reason = "auth"
)

// Error is every error of Open. Its message names the key ids involved and
// never holds key or plaintext bytes.
type Error struct {
	Reason Reason
	// KeyID is the key id the blob records (0 with ReasonFormat).
	KeyID uint32
	msg   string
}

func (e *Error) Error() string { return "secrets: " + e.msg }
