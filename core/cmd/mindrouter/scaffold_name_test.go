package main

import (
	"path/filepath"
	"strings"
	"testing"
)

func TestPluginNew_Refuses(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"Bad_Name"}, "lower-case letters"},
		{[]string{"--sdk", t.TempDir(), "ok"}, "has no go.mod of module github.com/mindrouter/mindrouter/sdk"},
		{[]string{"--dir", t.TempDir(), "--sdk", filepath.Join("..", "..", "..", "sdk"), "ok"}, "already exists"},
		{nil, "usage"},
	} {
		if err := pluginNew(tc.args); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v, want %q", tc.args, err, tc.want)
		}
	}
}
