package conformance

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strconv"
	"strings"

	"github.com/mindrouter/mindrouter/core/pluginhost"
	"github.com/mindrouter/mindrouter/sdk/abi"
)

// vector is one golden vector: one or more steps on one stream.
type vector struct {
	name  string
	steps []step
}

type step struct {
	op    abi.Op
	flags uint32
	meta  []byte
	in    []byte
	want  want
}

type want struct {
	status        abi.Status
	flags         uint32
	payload       []byte // nil: not checked
	payloadIsJSON bool
	meta          map[string]string
	errContains   string
}

// Wire forms of a *.vector.json file (see the package doc).
type vectorFile struct {
	Op    json.RawMessage   `json:"op"`
	Meta  map[string]string `json:"meta"`
	Flags json.RawMessage   `json:"flags"`
	Input json.RawMessage   `json:"input"`
	Items []json.RawMessage `json:"items"`
	Want  *wantFile         `json:"want"`
	Steps []vectorFile      `json:"steps"`
}

type wantFile struct {
	Status        string            `json:"status"`
	Flags         json.RawMessage   `json:"flags"`
	Payload       json.RawMessage   `json:"payload"`
	Items         []json.RawMessage `json:"items"`
	Meta          map[string]string `json:"meta"`
	ErrorContains string            `json:"error_contains"`
}

// loadVectors reads every *.vector.json and every <name>.in.json +
// <name>.out.json + <name>.op triple in dir, in name order.
func loadVectors(dir string) ([]vector, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("golden dir: %w", err)
	}
	var out []vector
	var errs []error
	for _, e := range entries {
		name := e.Name()
		var v vector
		var err error
		switch {
		case strings.HasSuffix(name, ".vector.json"):
			v, err = loadVectorFile(filepath.Join(dir, name))
		case strings.HasSuffix(name, ".op"):
			v, err = loadTriple(dir, strings.TrimSuffix(name, ".op"))
		default:
			continue
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", name, err))
			continue
		}
		out = append(out, v)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out, errors.Join(errs...)
}

func loadVectorFile(path string) (vector, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return vector{}, err
	}
	var f vectorFile
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&f); err != nil {
		return vector{}, err
	}
	v := vector{name: strings.TrimSuffix(filepath.Base(path), ".vector.json")}
	steps := f.Steps
	if len(steps) == 0 {
		steps = []vectorFile{f}
	}
	for i := range steps {
		st := steps[i]
		if st.Op == nil {
			st.Op = f.Op
		}
		if st.Meta == nil {
			st.Meta = f.Meta
		}
		s, err := st.step()
		if err != nil {
			return v, fmt.Errorf("step %d: %w", i, err)
		}
		v.steps = append(v.steps, s)
	}
	return v, nil
}

func (f *vectorFile) step() (step, error) {
	var s step
	var err error
	if s.op, err = parseOp(f.Op); err != nil {
		return s, err
	}
	if s.flags, err = parseFlags(f.Flags, map[string]uint32{"first": abi.FlagFirst, "end": abi.FlagEnd}); err != nil {
		return s, err
	}
	s.meta = encodeMeta(f.Meta)
	if s.in, err = payload(f.Input, f.Items); err != nil {
		return s, fmt.Errorf("input: %w", err)
	}
	if f.Want == nil {
		return s, errors.New("missing want")
	}
	w := f.Want
	st, ok := statusByName[w.Status]
	if w.Status == "" {
		st, ok = abi.StatusOK, true
	}
	if !ok {
		return s, fmt.Errorf("unknown status %q", w.Status)
	}
	s.want = want{status: st, meta: w.Meta, errContains: w.ErrorContains}
	if s.want.flags, err = parseFlags(w.Flags, map[string]uint32{"stream_done": abi.ResultStreamDone}); err != nil {
		return s, err
	}
	if w.Payload != nil || w.Items != nil {
		if s.want.payload, err = payload(w.Payload, w.Items); err != nil {
			return s, fmt.Errorf("want: %w", err)
		}
		s.want.payloadIsJSON = w.Items == nil && len(w.Payload) > 0 && w.Payload[0] != '"'
	}
	return s, nil
}

// loadTriple reads name.op (the op name, optional), name.in.json (the
// payload) and name.out.json (the expected JSON payload, status ok).
func loadTriple(dir, name string) (vector, error) {
	opText, err := os.ReadFile(filepath.Join(dir, name+".op"))
	if err != nil {
		return vector{}, err
	}
	op, err := parseOp(json.RawMessage(strconv.Quote(strings.TrimSpace(string(opText)))))
	if err != nil {
		return vector{}, err
	}
	in, err := os.ReadFile(filepath.Join(dir, name+".in.json"))
	if err != nil {
		return vector{}, err
	}
	out, err := os.ReadFile(filepath.Join(dir, name+".out.json"))
	if err != nil {
		return vector{}, err
	}
	return vector{name: name, steps: []step{{op: op, in: in,
		want: want{status: abi.StatusOK, payload: out, payloadIsJSON: true}}}}, nil
}

var opByName = func() map[string]abi.Op {
	m := map[string]abi.Op{}
	for op := abi.Op(0); op < 64; op++ {
		if n := op.String(); n != "unknown" {
			m[n] = op
		}
	}
	return m
}()

var statusByName = func() map[string]abi.Status {
	m := map[string]abi.Status{}
	for st := abi.Status(0); st < 16; st++ {
		if n := st.String(); n != "unknown" {
			m[n] = st
		}
	}
	return m
}()

func parseOp(raw json.RawMessage) (abi.Op, error) {
	var name string
	if err := json.Unmarshal(raw, &name); err == nil {
		if op, ok := opByName[name]; ok {
			return op, nil
		}
		return 0, fmt.Errorf("unknown op %q", name)
	}
	var n uint32
	if err := json.Unmarshal(raw, &n); err != nil {
		return 0, fmt.Errorf("op: want a name or a number, got %s", raw)
	}
	return abi.Op(n), nil
}

// parseFlags takes a number or a list of flag names.
func parseFlags(raw json.RawMessage, names map[string]uint32) (uint32, error) {
	if raw == nil {
		return 0, nil
	}
	var n uint32
	if err := json.Unmarshal(raw, &n); err == nil {
		return n, nil
	}
	var list []string
	if err := json.Unmarshal(raw, &list); err != nil {
		return 0, fmt.Errorf("flags: want a number or a list of names, got %s", raw)
	}
	for _, s := range list {
		f, ok := names[s]
		if !ok {
			return 0, fmt.Errorf("unknown flag %q", s)
		}
		n |= f
	}
	return n, nil
}

func encodeMeta(m map[string]string) []byte {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b []byte
	for _, k := range keys {
		b = abi.AppendMeta(b, k, m[k])
	}
	return b
}

// payload is a JSON string's content, any other JSON value's bytes as
// written, or a list payload of items (each a string or a JSON value).
func payload(raw json.RawMessage, items []json.RawMessage) ([]byte, error) {
	if items != nil {
		var list []byte
		for _, it := range items {
			b, err := payload(it, nil)
			if err != nil {
				return nil, err
			}
			list = abi.AppendItem(list, b)
		}
		if list == nil {
			list = []byte{}
		}
		return list, nil
	}
	if len(raw) > 0 && raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, err
		}
		return []byte(s), nil
	}
	return bytes.TrimSpace(raw), nil
}

// checkGolden runs every vector on the strict instances, state carried
// between a vector's steps.
func (s *session) checkGolden() (string, error) {
	vectors := s.part.vectors
	if len(vectors) == 0 {
		return "", skip("no golden vectors")
	}
	var errs []error
	calls := 0
	for _, v := range vectors {
		var state []byte
		var out pluginhost.Result
		for i, st := range v.steps {
			err := s.strict.Call(s.ctx, st.op, s.addr(st.op, pluginhost.CallInput{Flags: st.flags, State: state, Meta: st.meta, Payload: st.in}), &out)
			calls++
			if err := st.want.check(&out, err); err != nil {
				errs = append(errs, fmt.Errorf("%s step %d (%s): %w", v.name, i, st.op, err))
				break
			}
			state = append(state[:0], out.State...)
		}
	}
	return fmt.Sprintf("%d vectors, %d calls", len(vectors), calls), errors.Join(errs...)
}

func (w *want) check(out *pluginhost.Result, err error) error {
	if fatal(err) {
		return err
	}
	if out.Status != w.status {
		return fmt.Errorf("status %s (%s), want %s", out.Status, out.Err, w.status)
	}
	if w.flags&^out.Flags != 0 {
		return fmt.Errorf("result flags %#x lack %#x", out.Flags, w.flags)
	}
	if w.errContains != "" && !strings.Contains(string(out.Err), w.errContains) {
		return fmt.Errorf("error %q lacks %q", out.Err, w.errContains)
	}
	for k, v := range w.meta {
		if got, ok := abi.MetaGet(out.Meta, k); !ok || string(got) != v {
			return fmt.Errorf("meta %s = %q, want %q", k, got, v)
		}
	}
	if w.payload == nil {
		return nil
	}
	if w.payloadIsJSON {
		if !jsonEqual(out.Payload, w.payload) {
			return fmt.Errorf("payload\n got  %s\n want %s", out.Payload, w.payload)
		}
	} else if !bytes.Equal(out.Payload, w.payload) {
		return fmt.Errorf("payload\n got  %q\n want %q", out.Payload, w.payload)
	}
	return nil
}

// jsonEqual compares two JSON documents by value (numbers exactly).
func jsonEqual(a, b []byte) bool {
	var x, y any
	da, db := json.NewDecoder(bytes.NewReader(a)), json.NewDecoder(bytes.NewReader(b))
	da.UseNumber()
	db.UseNumber()
	if da.Decode(&x) != nil || db.Decode(&y) != nil {
		return bytes.Equal(a, b)
	}
	return reflect.DeepEqual(x, y)
}
