package sdk

import "github.com/mindrouter/mindrouter/sdk/canon"

// ErrorStatus maps the HTTP status of a backend's error response to the
// status and canonical error type the client should see, for use in an
// Adapter's DecodeError: e.Status, e.Type = sdk.ErrorStatus(status).
// Client mistakes keep their 4xx status (422 and unlisted 4xx become 400),
// 408 and 504 become a 504 timeout, 503 stays an overload, and every other
// status, including 5xx and statuses that should not carry an error at all,
// becomes a 502 backend error. Detecting a more specific error from the
// backend's wording (an error code such as "model_not_found") is left to the
// adapter.
func ErrorStatus(status int) (int, canon.ErrorType) {
	switch status {
	case 400, 422:
		return 400, canon.ErrInvalidRequest
	case 401:
		return 401, canon.ErrAuthentication
	case 403:
		return 403, canon.ErrPermission
	case 404:
		return 404, canon.ErrNotFound
	case 408, 504:
		return 504, canon.ErrTimeout
	case 413:
		return 413, canon.ErrRequestTooLarge
	case 429:
		return 429, canon.ErrRateLimit
	case 503:
		return 503, canon.ErrOverloaded
	}
	if status > 400 && status < 500 {
		return 400, canon.ErrInvalidRequest
	}
	// 5xx, and statuses that should not carry an error at all.
	return 502, canon.ErrBackend
}
