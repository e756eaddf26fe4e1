package sdk

import (
	"testing"

	"github.com/mindrouter/mindrouter/sdk/canon"
)

func TestErrorStatus(t *testing.T) {
	for _, tc := range []struct {
		in, status int
		typ        canon.ErrorType
	}{
		{0, 502, canon.ErrBackend},
		{200, 502, canon.ErrBackend},
		{302, 502, canon.ErrBackend},
		{400, 400, canon.ErrInvalidRequest},
		{401, 401, canon.ErrAuthentication},
		{402, 400, canon.ErrInvalidRequest},
		{403, 403, canon.ErrPermission},
		{404, 404, canon.ErrNotFound},
		{405, 400, canon.ErrInvalidRequest},
		{408, 504, canon.ErrTimeout},
		{409, 400, canon.ErrInvalidRequest},
		{413, 413, canon.ErrRequestTooLarge},
		{422, 400, canon.ErrInvalidRequest},
		{429, 429, canon.ErrRateLimit},
		{499, 400, canon.ErrInvalidRequest},
		{500, 502, canon.ErrBackend},
		{501, 502, canon.ErrBackend},
		{502, 502, canon.ErrBackend},
		{503, 503, canon.ErrOverloaded},
		{504, 504, canon.ErrTimeout},
		{599, 502, canon.ErrBackend},
		{600, 502, canon.ErrBackend},
	} {
		if status, typ := ErrorStatus(tc.in); status != tc.status || typ != tc.typ {
			t.Errorf("ErrorStatus(%d) = %d, %s; want %d, %s", tc.in, status, typ, tc.status, tc.typ)
		}
	}
}
