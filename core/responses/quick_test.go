package responses

import (
	"context"
	"encoding/json"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/mindrouter/mindrouter/core/apierr"
	"github.com/mindrouter/mindrouter/core/server"
)

// genID matches the ids the keeper makes up for items.
var genID = regexp.MustCompile(`\b(msg|fc|fco|rs|item)_[0-9a-f]{32}\b`)

// beginOutcome is what a Begin did with one request, then what it stored for
// it once answered.
type beginOutcome struct {
	Sent          string
	Turn          bool
	Status        int
	Param         string
	Stored        string // the stored input, made-up ids blanked
	Refs          []string
	StoredNothing bool
}

// run begins body on e with begin, answers it and reads what was stored.
func (e *env) run(begin func(context.Context, []byte) ([]byte, server.Turn, string, error), body string) beginOutcome {
	e.t.Helper()
	out, turn, respID, err := begin(context.Background(), []byte(body))
	if err != nil {
		ae, ok := err.(*apierr.Error)
		if !ok {
			e.t.Fatalf("Begin(%.200s): %v", body, err)
		}
		return beginOutcome{Status: ae.Status, Param: ae.Param}
	}
	o := beginOutcome{Sent: string(out), Turn: turn != nil}
	if turn == nil {
		return o
	}
	turn.Write([]byte(responseObject(respID, "completed", "ok")))
	turn.End(200)
	r, err := e.st.Response(context.Background(), alice.UserID, respID, e.clock.now())
	if err != nil {
		o.StoredNothing = true
		return o
	}
	o.Stored, o.Refs = genID.ReplaceAllString(string(r.Input), "$1_ID"), r.BlobRefs
	return o
}

func (e *env) beginWith(full bool) func(context.Context, []byte) ([]byte, server.Turn, string, error) {
	return func(ctx context.Context, body []byte) ([]byte, server.Turn, string, error) {
		reqID, respID := e.requestID()
		var (
			out  []byte
			turn server.Turn
			err  error
		)
		if full {
			out, turn, err = e.k.beginFull(ctx, alice, reqID, body)
		} else {
			out, turn, err = e.k.Begin(ctx, alice, reqID, body)
		}
		return out, turn, respID, err
	}
}

// Begin's quick path answers exactly as the full path, storing the same
// input (but for the ids both make up), for the requests it takes; the
// requests it must not judge alone go to the full path.
func TestBegin_QuickAgreesWithFull(t *testing.T) {
	img := "data:image/png;base64," + strings.Repeat("QUJD", 400) // over the 1 KiB blob threshold
	ascii := strings.Repeat("a", 1500)
	for _, tc := range []struct {
		name, body string
		quick      bool
	}{
		{"string input", `{"model":"m","input":"hi"}`, true},
		{"no input", `{"model":"m"}`, true},
		{"null input and store", `{"model":"m","input":null,"store":null}`, true},
		{"store false", `{"model":"m","store":false,"input":[{"role":"user","content":"x"}]}`, true},
		{"empty array", `{"model":"m","input":[ ]}`, true},
		{"typed items", `{"model":"m","instructions":"be brief","input":[` +
			`{"role":"system","content":"sys"},{"role":"assistant","content":"prior"},` +
			`{"type":"message","role":"user","content":[{"type":"input_text","text":"q"}],"id":"msg_given"},` +
			`{"type":"function_call","call_id":"c1","name":"f","arguments":"{\"a\":[1,{\"b\":\"]\"}]}"},` +
			`{"type":"function_call_output","call_id":"c1","output":"42"},` +
			`{"type":"reasoning","summary":[]},{"type":"item_reference","id":"msg_x"}]}`, true},
		{"pretty printed", "{\n  \"model\": \"m\",\n  \"input\": [\n    { \"role\" : \"user\" , \"content\" : \"x\" } ,\n" +
			"    {\"type\":\"message\",\"role\":\"user\",\"content\":\"y\"}\n  ]\n}\n", true},
		{"escapes in text", `{"model":"m","input":[{"role":"user","content":"a\"b\\c\u00e9 \u003c\/ \ud83d\ude00 \n"}]}`, true},
		{"images", `{"model":"m","input":[{"role":"user","content":[{"type":"input_text","text":"what?"},` +
			`{"type":"input_image","image_url":"` + img + `"},{"type":"input_image","image_url":"data:image/png;base64,QUJD"}]}]}`, true},
		{"items fit, body does not", `{"model":"m","input":[{"role":"user","content":"` + ascii + `"},` +
			`{"role":"user","content":"` + ascii + `"}]}`, true},

		{"non-ASCII items fit", `{"model":"m","input":[{"role":"user","content":"` + strings.Repeat("é", 700) + `"},` +
			`{"role":"user","content":"` + strings.Repeat("é", 700) + `"}]}`, true},

		{"null previous_response_id", `{"model":"m","previous_response_id":null,"input":"x"}`, false},
		{"null conversation", `{"model":"m","conversation":null,"store":false}`, false},
		{"store not a boolean", `{"model":"m","store":"yes"}`, false},
		{"input a number", `{"model":"m","input":5}`, false},
		{"item not an object", `{"model":"m","input":[{"role":"user","content":"x"},[1]]}`, false},
		{"item type not a string", `{"model":"m","input":[{"type":7}]}`, false},
		{"item id invalid", `{"model":"m","input":[{"role":"user","content":"x","id":"no spaces"}]}`, false},
		{"item id escaped", `{"model":"m","input":[{"role":"user","content":"x","id":"msg\u005f1"}]}`, false},
		{"item key escaped", `{"model":"m","input":[{"role":"user","content":"x","\u0069d":"bad id"}]}`, false},
		{"reserved image scheme", `{"model":"m","input":[{"role":"user","content":[{"type":"input_image","image_url":"mr-blob:sha256:00"}]}]}`, false},
		{"reserved scheme escaped", `{"model":"m","input":[{"role":"user","content":[{"type":"input_image","image_url":"m\u0072-blob:sha256:00"}]}]}`, false},
		{"not JSON", `{"model":`, false},
		{"not an object", `[1,2]`, false},
		{"item over the bound", `{"model":"m","input":[{"role":"user","content":"` + strings.Repeat("a", 2100) + `"}]}`, false},
		// Under the bound as sent, over it re-encoded: the quick path
		// must not take them.
		{"line separators", `{"model":"m","input":[{"role":"user","content":"` + strings.Repeat("\u2028", 500) + `"}]}`, false},
		{"invalid UTF-8", `{"model":"m","input":"` + strings.Repeat("\xff", 400) + `"}`, false},
		{"backspace escapes", `{"model":"m","input":[{"role":"user","content":"` + strings.Repeat(`\b`, 500) + `"}]}`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opt := func(o *Options) { o.MaxItemBytes = 2048 }
			quick, full := newEnv(t, opt), newEnv(t, opt)
			if _, _, ok := quick.k.quick([]byte(tc.body)); ok != tc.quick {
				t.Errorf("quick path taken: %v, want %v", ok, tc.quick)
			}
			got, want := quick.run(quick.beginWith(false), tc.body), full.run(full.beginWith(true), tc.body)
			if d := cmp.Diff(want, got); d != "" {
				t.Errorf("quick path (+) differs from the full path (-):\n%s", d)
			}
			if !tc.quick {
				return
			}
			if got.Sent != tc.body {
				t.Errorf("the body was rewritten: %s", got.Sent)
			}
			if got.Turn && (got.StoredNothing || !json.Valid([]byte(got.Stored))) {
				t.Errorf("stored input: %q (nothing stored: %v)", got.Stored, got.StoredNothing)
			}
		})
	}
}

// With a key repeated, the quick path stores what the translator acts on
// (the last occurrence, as every plugin decoder keeps).
func TestBegin_QuickDuplicateKeys(t *testing.T) {
	e := newEnv(t)
	_, id := e.answer(alice, `{"model":"m","input":"first","store":false,"input":"second","store":true}`, "ok")
	var list struct {
		Data []map[string]any `json:"data"`
	}
	e.ok(alice, "GET", "/v1/responses/"+id+"/input_items", "", &list)
	if d := cmp.Diff([]string{"second"}, texts(list.Data)); d != "" {
		t.Errorf("stored input (-want +got):\n%s", d)
	}
}

// Whatever the quick path takes, the Turn can prepare for storage: the
// scan's checks imply prepareItem's (type, id, the reserved scheme, the
// item bound, here a small one).
func FuzzQuick(f *testing.F) {
	k := New(nil, Options{MaxItemBytes: 512, BlobThreshold: 64}, nil)
	for _, s := range []string{
		`{"model":"m","input":"hi"}`,
		`{"input":[{"role":"user","content":"x","id":"msg_1"},{"type":"function_call","call_id":"c","arguments":"{}"}]}`,
		`{"input":[{"role":"assistant","content":"a\"b\\c\u00e9"}],"store":true}`,
		`{"input":[{"role":"user","content":[{"type":"input_image","image_url":"data:image/png;base64,` + strings.Repeat("QUJD", 30) + `"}]}]}`,
		`{"input":[{"type":"message","type":7}]}`,
		`{"input":[{"id":"a","id":"b c"}]}`,
		`{"input":"` + strings.Repeat(`\b`, 60) + `"}`,
		`{"input":[{"content":"` + strings.Repeat("\u2028", 100) + `"}]}`,
		`{"input":[{"content":"m\u0072-blob:sha256:0"}]}`,
		`{"input":[{"x":[{"y":"]}\"["}],"id":"z"}]}`,
		` { "input" : [ { "id" : "q" } , { } ] } `,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		store, raw, ok := k.quick(body)
		if !ok || !store {
			return
		}
		tn := &turn{k: k, store: true, lazy: true, raw: raw}
		a := k.arenas.Get()
		defer func() { a.Reset(); k.arenas.Put(a) }()
		if err := tn.prepare(a); err != nil {
			t.Fatalf("quick took %q, but preparing its input fails: %v", body, err)
		}
		if !json.Valid(tn.input) {
			t.Fatalf("quick took %q: stored input %q is not JSON", body, tn.input)
		}
	})
}
