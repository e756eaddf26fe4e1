package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/conversations"
	"github.com/openai/openai-go/v3/responses"
	"github.com/openai/openai-go/v3/shared"

	"github.com/mindrouter/mindrouter/bench/fakellm"
)

// TestErrorTypes_Documented: every error the gateway answers carries the
// type the real API documents for it — OpenAI's invalid_request_error,
// authentication_error, permission_error, rate_limit_error, server_error;
// Anthropic's invalid_request_error, authentication_error,
// permission_error, not_found_error, … — never a canonical name
// ("permission", "not_found", "rate_limit") the host wrote natively: the
// Responses and Conversations state routes and unknown routes are
// answered without a translator.
func TestErrorTypes_Documented(t *testing.T) {
	t.Parallel()
	e := startEnv(t, fakellm.Config{}, fakellm.Config{}, "")
	ctx := context.Background()
	_, adminOnly := newUser(t, e.base, "ops", "admin", nil, []string{"admin"})
	_, slow := newUser(t, e.base, "rita", "staff", map[string]any{"rpm_limit_override": 1}, nil)
	openaiType := func(t *testing.T, err error, status int, typ string) {
		t.Helper()
		var ae *openai.Error
		if !errors.As(err, &ae) || ae.StatusCode != status || ae.Type != typ {
			t.Fatalf("got %v, want %d %s", err, status, typ)
		}
	}
	newConv := func(key string) error {
		c := client(e, key)
		_, err := c.Conversations.New(ctx, conversations.ConversationNewParams{Metadata: shared.Metadata{"topic": "types"}})
		return err
	}
	t.Run("conversations 403", func(t *testing.T) {
		openaiType(t, newConv(adminOnly.FullKey), 403, "permission_error")
	})
	t.Run("conversations 401", func(t *testing.T) {
		openaiType(t, newConv("mr2_wrong_0123456789abcdef"), 401, "authentication_error")
	})
	t.Run("conversations 429", func(t *testing.T) {
		if err := newConv(slow.FullKey); err != nil {
			t.Fatal(err)
		}
		openaiType(t, newConv(slow.FullKey), 429, "rate_limit_error")
	})
	t.Run("responses 403", func(t *testing.T) {
		c := client(e, adminOnly.FullKey)
		_, err := c.Responses.Get(ctx, "resp_0123", responses.ResponseGetParams{})
		openaiType(t, err, 403, "permission_error")
	})
	t.Run("unknown route 404", func(t *testing.T) {
		c := client(e, adminKey)
		err := c.Post(ctx, "no/such/route", map[string]any{}, nil)
		openaiType(t, err, 404, "invalid_request_error")
	})
	t.Run("anthropic", func(t *testing.T) {
		for _, tc := range []struct {
			key, model string
			status     int
			typ        string
		}{
			{"mr2_wrong_0123456789abcdef", vllmModel, 401, "authentication_error"},
			{adminOnly.FullKey, vllmModel, 403, "permission_error"},
			{adminKey, "no-such-model", 404, "not_found_error"},
		} {
			ac := anthropicClient(e, false, tc.key)
			_, err := ac.Messages.New(ctx, anthropicParams(tc.model, "hi"))
			var ae *anthropic.Error
			var body struct {
				Error struct{ Type string } `json:"error"`
			}
			if !errors.As(err, &ae) || json.Unmarshal([]byte(ae.RawJSON()), &body) != nil || ae.StatusCode != tc.status || body.Error.Type != tc.typ {
				t.Fatalf("got %v, want %d %s", err, tc.status, tc.typ)
			}
		}
	})
}
