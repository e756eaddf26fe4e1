package allowlist

import (
	"strings"
	"testing"
)

func TestList_Allows(t *testing.T) {
	tests := []struct {
		name     string
		patterns []string
		model    string
		want     bool
	}{
		{"empty allows all", nil, "anything", true},
		{"exact", []string{"qwen3-8b"}, "qwen3-8b", true},
		{"exact other", []string{"qwen3-8b"}, "qwen3-80b", false},
		{"prefix glob", []string{"llama3*"}, "llama3.1:8b", true},
		{"prefix glob other", []string{"llama3*"}, "llama2:7b", false},
		{"star crosses slash", []string{"openai/*"}, "openai/gpt-oss-20b", true},
		{"namespace only", []string{"openai/*"}, "meta/llama", false},
		{"star alone", []string{"*"}, "x", true},
		{"question mark", []string{"phi?"}, "phi4", true},
		{"question mark needs one", []string{"phi?"}, "phi", false},
		{"middle star", []string{"qwen*-instruct"}, "qwen2.5-7b-instruct", true},
		{"middle star suffix differs", []string{"qwen*-instruct"}, "qwen2.5-7b-base", false},
		{"case ignored", []string{"Llama3*"}, "LLAMA3:8B", true},
		{"latest alias of name", []string{"llama3"}, "llama3:latest", true},
		{"name alias of latest", []string{"llama3:latest"}, "llama3", true},
		{"tag glob covers untagged", []string{"llama3:*"}, "llama3", true},
		{"other tag is not latest", []string{"llama3"}, "llama3:70b", false},
		{"second pattern", []string{"a", "b*"}, "bee", true},
		{"no partial match", []string{"qwen"}, "qwen3", false},
		{"backtracking", []string{"*a*b*c"}, "xaxbxbxc", true},
		{"backtracking fails", []string{"*a*b*c"}, "xaxbxbxd", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := Compile(tc.patterns).Allows(tc.model); got != tc.want {
				t.Fatalf("Compile(%q).Allows(%q) = %v, want %v", tc.patterns, tc.model, got, tc.want)
			}
		})
	}
}

func TestList_PathologicalPatternIsLinear(t *testing.T) {
	// A backtracking matcher would take exponential time here.
	pat := strings.Repeat("*a", 40) + "b"
	name := strings.Repeat("a", 200)
	if Compile([]string{pat}).Allows(name) {
		t.Fatal("matched a name without b")
	}
}

func TestCheck(t *testing.T) {
	tests := []struct {
		name     string
		patterns []string
		wantErr  string
	}{
		{"ok", []string{"llama3*", "openai/*", "qwen3-8b"}, ""},
		{"none", []string{}, ""},
		{"empty entry", []string{"a", ""}, "pattern 1: empty"},
		{"space", []string{"a b"}, "spaces or control"},
		{"control", []string{"a\nb"}, "spaces or control"},
		{"too long", []string{strings.Repeat("a", MaxPatternLen+1)}, "longer than"},
		{"too many", make([]string, MaxPatterns+1), "at most"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := Check(tc.patterns)
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("Check = %v, want nil", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("Check = %v, want %q", err, tc.wantErr)
			}
		})
	}
}

func TestList_All(t *testing.T) {
	if !Compile(nil).All() || !Compile([]string{}).All() {
		t.Fatal("an empty list must allow all")
	}
	if Compile([]string{"a"}).All() {
		t.Fatal("a non-empty list is not all")
	}
}
