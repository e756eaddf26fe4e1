package admin

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

func TestDecode_Nullable(t *testing.T) {
	var in userIn
	fields, err := decode([]byte(`{"rpm_limit_override": null, "token_budget_override": 5}`), &in)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(fields, []string{"rpm_limit_override", "token_budget_override"}) {
		t.Errorf("fields %v", fields)
	}
	if !in.RPMOverride.Set || !in.RPMOverride.Null || !in.TokenBudgetOverride.Set || in.TokenBudgetOverride.V != 5 || in.MaxConcurrentOverride.Set {
		t.Errorf("decoded %+v", in)
	}
	_, err = decode([]byte(`{"rpm_limit_override": "x"}`), &in)
	var ae *apiError
	if b, _ := json.Marshal(err.Error()); err == nil || !asAPIError(err, &ae) || ae.Status != 400 {
		t.Fatalf("type error in a nullable field: %s", b)
	}
	if ae.Detail != "field rpm_limit_override: expected an integer, got string" {
		t.Errorf("detail %q", ae.Detail)
	}
}

func asAPIError(err error, ae **apiError) bool {
	e, ok := err.(*apiError)
	*ae = e
	return ok
}

func TestDecode_EchoBounded(t *testing.T) {
	key := "mr2_" + strings.Repeat("A", 43)
	_, err := decode([]byte(`{"`+key+`": 1}`), &userIn{})
	if err == nil || strings.Contains(err.Error(), key[4:]) || !strings.Contains(err.Error(), "unknown field") {
		t.Errorf("unknown field named by a key: %v", err)
	}
	_, err = decode([]byte(`{"`+strings.Repeat("x", 5000)+`": 1}`), &userIn{})
	if err == nil || len(err.Error()) > 400 {
		t.Errorf("a long field name is echoed whole: %d bytes", len(err.Error()))
	}
}
