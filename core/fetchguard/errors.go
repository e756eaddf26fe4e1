package fetchguard

import "fmt"

// Reason says why a fetch or data URL was refused, so the caller can pick a
// status and code for the client.
type Reason uint8

// Reasons. All of them but ReasonBusy are the client's fault or the
// remote host's, never the gateway's.
const (
	ReasonURL              Reason = iota + 1 // malformed URL, host or data URL
	ReasonScheme                             // not http or https (also on a redirect)
	ReasonForbiddenAddress                   // host is or resolves to a refused address or name
	ReasonDNS                                // host did not resolve
	ReasonConnect                            // connection, TLS or protocol failure
	ReasonTimeout                            // the fetch ran past Config.Timeout
	ReasonStatus                             // the final response was not 200
	ReasonTooLarge                           // body over Config.MaxBytes
	ReasonNotImage                           // not image/* or not PNG, JPEG, GIF or WebP bytes
	ReasonRedirects                          // more than Config.MaxRedirects redirects
	ReasonBusy                               // a gateway-wide Budget had no room (the only gateway-side reason)
)

var reasonNames = [...]string{
	ReasonURL:              "url",
	ReasonScheme:           "scheme",
	ReasonForbiddenAddress: "forbidden_address",
	ReasonDNS:              "dns",
	ReasonConnect:          "connect",
	ReasonTimeout:          "timeout",
	ReasonStatus:           "status",
	ReasonTooLarge:         "too_large",
	ReasonNotImage:         "not_image",
	ReasonRedirects:        "redirects",
	ReasonBusy:             "busy",
}

// String is a stable snake_case name, usable as a metric label or error code.
func (r Reason) String() string {
	if int(r) < len(reasonNames) && reasonNames[r] != "" {
		return reasonNames[r]
	}
	return fmt.Sprintf("reason(%d)", uint8(r))
}

// Error is a refused fetch. Msg is safe to show the client: it never names
// a resolved address or internal detail. Err is the cause, for logs only.
type Error struct {
	Reason Reason
	Msg    string
	Err    error
}

// Error returns only the client-safe message, so passing the error on
// unchanged leaks nothing.
func (e *Error) Error() string { return e.Msg }

// Unwrap gives the cause, for logs.
func (e *Error) Unwrap() error { return e.Err }

func newError(r Reason, cause error, format string, args ...any) *Error {
	return &Error{Reason: r, Msg: fmt.Sprintf(format, args...), Err: cause}
}

// errForbidden is the one message for every refused host or address, so a
// client cannot tell which rule (or which resolved address) tripped.
func errForbidden(cause error) *Error {
	return newError(ReasonForbiddenAddress, cause, "image URL host is not allowed")
}
