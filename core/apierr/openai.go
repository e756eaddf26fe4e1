package apierr

import "github.com/mindrouter/mindrouter/sdk/canon"

// OpenAIType is the error.type OpenAI's API gives an error of canonical
// type t (status classifies one of no known type), for the answers the
// gateway writes in OpenAI's shape without a translator: the Responses
// and Conversations state routes, unknown routes, and the fallback when
// a translator cannot render an error. The canonical names ("permission",
// "not_found") are not OpenAI's; applications match on these. It agrees
// with plugins/openai: OpenAI answers 404 and 413 with
// invalid_request_error and every 5xx with server_error.
func OpenAIType(t canon.ErrorType, status int) string {
	switch t {
	case canon.ErrInvalidRequest, canon.ErrNotFound, canon.ErrRequestTooLarge:
		return "invalid_request_error"
	case canon.ErrAuthentication:
		return "authentication_error"
	case canon.ErrPermission:
		return "permission_error"
	case canon.ErrRateLimit:
		return "rate_limit_error"
	case canon.ErrBackend, canon.ErrOverloaded, canon.ErrTimeout, canon.ErrInternal:
		return "server_error"
	}
	switch {
	case status == 401:
		return "authentication_error"
	case status == 403:
		return "permission_error"
	case status == 429:
		return "rate_limit_error"
	case status >= 400 && status < 500:
		return "invalid_request_error"
	}
	return "server_error"
}
