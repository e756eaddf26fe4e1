package apierr

import (
	"errors"
	"fmt"
	"testing"

	"github.com/mindrouter/mindrouter/sdk/canon"
)

func TestPublic(t *testing.T) {
	e := New(canon.ErrNotFound, "model_not_found", "model x does not exist")
	if got := Public(fmt.Errorf("route: %w", e)); got != e || got.Status != 404 {
		t.Fatalf("Public kept %+v", got)
	}
	hidden := Public(errors.New("dial tcp 10.0.0.1: secret detail"))
	if hidden.Status != 500 || hidden.Msg != "internal error" {
		t.Fatalf("internal error leaked: %+v", hidden)
	}
}

func TestStatusOf(t *testing.T) {
	for typ, want := range map[canon.ErrorType]int{
		canon.ErrInvalidRequest: 400, canon.ErrAuthentication: 401, canon.ErrPermission: 403,
		canon.ErrNotFound: 404, canon.ErrRequestTooLarge: 413, canon.ErrRateLimit: 429,
		canon.ErrBackend: 502, canon.ErrOverloaded: 503, canon.ErrTimeout: 504, canon.ErrInternal: 500,
	} {
		if got := StatusOf(typ); got != want {
			t.Errorf("StatusOf(%s) = %d, want %d", typ, got, want)
		}
	}
}
