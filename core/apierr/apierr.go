// Package apierr is the one error type a client may see. Everything that
// reaches a client passes through Public, which keeps the message of an
// *Error and turns anything else into a 500 "internal error" so internal
// details never leak. Translators render an Error in the client's dialect.
package apierr

import (
	"errors"
	"net/http"

	"github.com/mindrouter/mindrouter/sdk/canon"
)

// Error is a client-visible failure.
type Error struct {
	Type   canon.ErrorType
	Status int
	Code   string // machine-readable, e.g. "model_not_found"
	Msg    string
	Param  string
	// RetryAfter, in seconds, is sent as Retry-After; every 429 and 503
	// gets one (DefaultRetryAfter when zero).
	RetryAfter int
	Err        error // cause, for logs only
}

// DefaultRetryAfter is the Retry-After of a 429 or 503 that names none.
const DefaultRetryAfter = 1

// RetryAfterSeconds is the Retry-After value to send with e, or 0 for none.
func (e *Error) RetryAfterSeconds() int {
	if e.RetryAfter > 0 {
		return e.RetryAfter
	}
	if e.Status == http.StatusTooManyRequests || e.Status == http.StatusServiceUnavailable {
		return DefaultRetryAfter
	}
	return 0
}

func (e *Error) Error() string {
	if e.Err != nil {
		return e.Msg + ": " + e.Err.Error()
	}
	return e.Msg
}

func (e *Error) Unwrap() error { return e.Err }

// New returns an Error of type t with the status that type implies.
func New(t canon.ErrorType, code, msg string) *Error {
	return &Error{Type: t, Status: StatusOf(t), Code: code, Msg: msg}
}

// WithStatus overrides the HTTP status e's type implies (408, 405, ...).
func (e *Error) WithStatus(status int) *Error {
	e.Status = status
	return e
}

// Wrap is New with a cause kept for logs.
func Wrap(t canon.ErrorType, code, msg string, err error) *Error {
	e := New(t, code, msg)
	e.Err = err
	return e
}

// StatusOf maps an error type to its HTTP status.
func StatusOf(t canon.ErrorType) int {
	switch t {
	case canon.ErrInvalidRequest:
		return http.StatusBadRequest
	case canon.ErrAuthentication:
		return http.StatusUnauthorized
	case canon.ErrPermission:
		return http.StatusForbidden
	case canon.ErrNotFound:
		return http.StatusNotFound
	case canon.ErrRequestTooLarge:
		return http.StatusRequestEntityTooLarge
	case canon.ErrRateLimit:
		return http.StatusTooManyRequests
	case canon.ErrBackend:
		return http.StatusBadGateway
	case canon.ErrOverloaded:
		return http.StatusServiceUnavailable
	case canon.ErrTimeout:
		return http.StatusGatewayTimeout
	}
	return http.StatusInternalServerError
}

// Public returns the client-visible form of err.
func Public(err error) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	return Wrap(canon.ErrInternal, "internal_error", "internal error", err)
}

// Canon converts e to the canonical error handed to a translator.
func (e *Error) Canon(requestID string) canon.Error {
	return canon.Error{Status: e.Status, Type: e.Type, Code: e.Code, Message: e.Msg, Param: e.Param, RequestID: requestID}
}
