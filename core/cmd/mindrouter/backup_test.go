package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestBackupRestore backs up a store (while another connection holds it
// open, as a running gateway does), changes the store, restores the
// backup and finds the state of the backup.
func TestBackupRestore(t *testing.T) {
	c := newCLI(t, "")
	c.ok("users", "create", "--username", "ada", "--group", "researchers")
	live := c.store() // an open handle, like a gateway's
	dir := filepath.Join(t.TempDir(), "b1")
	var out bytes.Buffer
	if err := runBackup(context.Background(), []string{"--config", c.config, "--to", dir}, &out); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "store: "+c.db) {
		t.Errorf("backup printed %q", out.String())
	}
	for _, f := range []string{"manifest.json", "store.db"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Fatalf("backup lacks %s: %v", f, err)
		}
	}
	live.Close()
	c.ok("users", "create", "--username", "bo", "--group", "students")

	if err := runRestore(context.Background(), []string{"--config", c.config, "--from", dir}, &out); err == nil || !strings.Contains(err.Error(), "--force") {
		t.Fatalf("restore over an existing store without --force: %v", err)
	}
	if err := runRestore(context.Background(), []string{"--config", c.config, "--from", dir, "--force"}, &out); err != nil {
		t.Fatal(err)
	}
	list := c.ok("users", "list")
	if !strings.Contains(list, "ada") || strings.Contains(list, "bo") {
		t.Fatalf("after restore: %s", list)
	}
	aside, _ := filepath.Glob(c.db + ".before-restore-*")
	if len(aside) == 0 {
		t.Error("the replaced store was not kept aside")
	}

	// A damaged backup is refused before anything is touched.
	f, err := os.OpenFile(filepath.Join(dir, "store.db"), os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteAt([]byte("garbage"), 4096)
	f.Close()
	if err := runRestore(context.Background(), []string{"--config", c.config, "--from", dir, "--force"}, &out); err == nil || !strings.Contains(err.Error(), "checksum") {
		t.Fatalf("a damaged backup: %v", err)
	}
	if list := c.ok("users", "list"); !strings.Contains(list, "ada") {
		t.Fatalf("a refused restore changed the store: %s", list)
	}
}
