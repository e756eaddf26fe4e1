package main

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	_ "modernc.org/sqlite" // the embedded store's driver

	"github.com/mindrouter/mindrouter/core/config"
	"github.com/mindrouter/mindrouter/core/version"
)

// backupManifest describes a backup directory (manifest.json).
type backupManifest struct {
	Version string       `json:"gateway_version"`
	Created time.Time    `json:"created"`
	Files   []backupFile `json:"files"`
}

type backupFile struct {
	Role   string `json:"role"` // store | audit
	Name   string `json:"name"` // in the backup directory
	Source string `json:"source"`
	Bytes  int64  `json:"bytes"`
	SHA256 string `json:"sha256"`
}

// embeddedFiles are the SQLite files of a config: the store when it is
// SQLite, the embedded audit sink when the audit is on and has no
// ClickHouse. MySQL and ClickHouse have their own tools
// (docs/operations.md, "Backups").
func embeddedFiles(cfg *config.Config) (map[string]string, error) {
	files := map[string]string{}
	if cfg.Store.Driver == "sqlite" {
		dsn := cfg.StoreDSN()
		if dsn == ":memory:" || strings.HasPrefix(dsn, "file:") {
			return nil, fmt.Errorf("backup: store.dsn %q: back up a plain file path only", dsn)
		}
		files["store"] = dsn
	}
	if cfg.AuditOn() && len(cfg.Audit.ClickHouse.Addr) == 0 {
		files["audit"] = cfg.DataPath(cfg.Audit.Embedded)
	}
	if len(files) == 0 {
		return nil, errors.New("backup: nothing embedded to back up (the store is MySQL and the audit ClickHouse: see docs/operations.md)")
	}
	return files, nil
}

func backupCmd(args []string) error { return runBackup(context.Background(), args, os.Stdout) }

// runBackup copies each embedded SQLite file with VACUUM INTO: a
// consistent snapshot taken while the gateway keeps running and writing
// (WAL readers do not block writers), compacted, with no -wal to carry.
func runBackup(ctx context.Context, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("backup", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	cfgPath := fs.String("config", "", "gateway config file (YAML); empty: embedded defaults")
	to := fs.String("to", "", "directory to create for the backup (must not exist)")
	if err := fs.Parse(args); err != nil || fs.NArg() != 0 || *to == "" {
		return errors.New("usage: mindrouter backup [--config FILE] --to DIR")
	}
	cfg, err := loadConfig(*cfgPath)
	if err != nil {
		return err
	}
	files, err := embeddedFiles(cfg)
	if err != nil {
		return err
	}
	if err := os.Mkdir(*to, 0o700); err != nil {
		return fmt.Errorf("backup: %w", err)
	}
	m := backupManifest{Version: version.String(), Created: time.Now().UTC()}
	for _, role := range []string{"store", "audit"} {
		src, ok := files[role]
		if !ok {
			continue
		}
		if _, err := os.Stat(src); err != nil {
			if role == "audit" && errors.Is(err, os.ErrNotExist) {
				fmt.Fprintf(out, "audit: %s does not exist yet (no request recorded)\n", src)
				continue
			}
			return fmt.Errorf("backup %s: %w", role, err)
		}
		name := role + ".db"
		dst := filepath.Join(*to, name)
		if err := vacuumInto(ctx, src, dst); err != nil {
			return fmt.Errorf("backup %s (%s): %w", role, src, err)
		}
		sum, n, err := fileSum(dst)
		if err != nil {
			return err
		}
		m.Files = append(m.Files, backupFile{Role: role, Name: name, Source: src, Bytes: n, SHA256: sum})
		fmt.Fprintf(out, "%s: %s -> %s (%d bytes)\n", role, src, dst, n)
	}
	b, _ := json.MarshalIndent(m, "", "  ")
	return os.WriteFile(filepath.Join(*to, "manifest.json"), append(b, '\n'), 0o600)
}

func restoreCmd(args []string) error { return runRestore(context.Background(), args, os.Stdout) }

// runRestore puts a backup's files back, with the gateway stopped. It
// checks every file (checksum, then SQLite's integrity_check) before it
// touches anything, and moves what it replaces aside, never deletes it.
func runRestore(ctx context.Context, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("restore", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	cfgPath := fs.String("config", "", "gateway config file (YAML); empty: embedded defaults")
	from := fs.String("from", "", "a directory `mindrouter backup` wrote")
	force := fs.Bool("force", false, "replace existing files (moved aside as FILE.before-restore-TIME)")
	if err := fs.Parse(args); err != nil || fs.NArg() != 0 || *from == "" {
		return errors.New("usage: mindrouter restore [--config FILE] --from DIR [--force]   (stop the gateway first)")
	}
	cfg, err := loadConfig(*cfgPath)
	if err != nil {
		return err
	}
	targets, err := embeddedFiles(cfg)
	if err != nil {
		return err
	}
	b, err := os.ReadFile(filepath.Join(*from, "manifest.json"))
	if err != nil {
		return fmt.Errorf("restore: %w", err)
	}
	var m backupManifest
	if err := json.Unmarshal(b, &m); err != nil {
		return fmt.Errorf("restore: manifest.json: %w", err)
	}
	for _, f := range m.Files {
		if _, ok := targets[f.Role]; !ok {
			return fmt.Errorf("restore: the backup has a %s file but this config keeps no embedded %s", f.Role, f.Role)
		}
		p := filepath.Join(*from, filepath.Base(f.Name))
		sum, _, err := fileSum(p)
		if err != nil {
			return err
		}
		if sum != f.SHA256 {
			return fmt.Errorf("restore: %s: checksum %s, manifest says %s", p, sum, f.SHA256)
		}
		if err := integrityCheck(ctx, p); err != nil {
			return fmt.Errorf("restore: %s: %w", p, err)
		}
		if _, err := os.Stat(targets[f.Role]); err == nil && !*force {
			return fmt.Errorf("restore: %s exists (stop the gateway, then pass --force to replace it)", targets[f.Role])
		}
	}
	stamp := time.Now().UTC().Format("20060102T150405Z")
	for _, f := range m.Files {
		dst := targets[f.Role]
		if err := os.MkdirAll(filepath.Dir(dst), 0o750); err != nil {
			return fmt.Errorf("restore: %w", err)
		}
		// The old database and its WAL go aside together: a -wal left
		// beside the restored file would be replayed into it.
		for _, suffix := range []string{"", "-wal", "-shm"} {
			if _, err := os.Stat(dst + suffix); err == nil {
				if err := os.Rename(dst+suffix, dst+suffix+".before-restore-"+stamp); err != nil {
					return fmt.Errorf("restore: move %s aside: %w", dst+suffix, err)
				}
			}
		}
		if err := copyFile(filepath.Join(*from, filepath.Base(f.Name)), dst); err != nil {
			return err
		}
		fmt.Fprintf(out, "%s: restored %s (backup of %s)\n", f.Role, dst, m.Created.Format(time.RFC3339))
	}
	return nil
}

func vacuumInto(ctx context.Context, src, dst string) error {
	db, err := sql.Open("sqlite", "file:"+src+"?mode=ro&_pragma=busy_timeout(10000)")
	if err != nil {
		return err
	}
	defer db.Close()
	_, err = db.ExecContext(ctx, "VACUUM INTO ?", dst)
	return err
}

func integrityCheck(ctx context.Context, p string) error {
	db, err := sql.Open("sqlite", "file:"+p+"?mode=ro")
	if err != nil {
		return err
	}
	defer db.Close()
	var res string
	if err := db.QueryRowContext(ctx, "PRAGMA integrity_check").Scan(&res); err != nil {
		return fmt.Errorf("integrity check: %w", err)
	}
	if res != "ok" {
		return fmt.Errorf("integrity check: %s", res)
	}
	return nil
}

func fileSum(p string) (string, int64, error) {
	f, err := os.Open(p)
	if err != nil {
		return "", 0, err
	}
	defer f.Close()
	h := sha256.New()
	n, err := io.Copy(h, f)
	return hex.EncodeToString(h.Sum(nil)), n, err
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return fmt.Errorf("restore: %w", err)
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return fmt.Errorf("restore: %w", err)
	}
	if err := out.Sync(); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
