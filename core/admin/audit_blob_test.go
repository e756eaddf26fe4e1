package admin

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mindrouter/mindrouter/core/audit"
)

// An auditor reads an image the audit stored by reference; a bad hash is
// a 400, an unknown one a 404, and a key without the audit scope a 403.
func TestAuditBlob(t *testing.T) {
	db, err := audit.OpenEmbedded(filepath.Join(t.TempDir(), "audit.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	data := "\x89PNG\r\n\x1a\nnot really an image"
	h := sha256.Sum256([]byte(data))
	sum := hex.EncodeToString(h[:])
	if _, err := db.Exec(`INSERT INTO blobs (sha256, media_type, size, data, time, request_id) VALUES (?, ?, ?, ?, ?, ?)`,
		sum, "image/png", len(data), []byte(data), "2026-12-01 00:00:00.000000", "req-1"); err != nil {
		t.Fatal(err)
	}
	e := withAudit(newEnv(t), audit.NewSQLiteSearcher(db))

	m := e.ok(e.auditorKey, "GET", "/api/admin/audit/blobs/"+sum, nil)
	got, _ := base64.StdEncoding.DecodeString(m["data_base64"].(string))
	if m["sha256"] != sum || m["media_type"] != "image/png" || num(m["size"]) != int64(len(data)) || string(got) != data {
		t.Fatalf("blob: %v", m)
	}
	if d := e.fail(e.adminKey, "GET", "/api/admin/audit/blobs/"+strings.ToUpper(sum), nil, 400); !strings.Contains(d, "sha256") {
		t.Errorf("bad hash: %s", d)
	}
	e.fail(e.adminKey, "GET", "/api/admin/audit/blobs/"+strings.Repeat("0", 64), nil, 404)
	e.fail(e.aliceKey, "GET", "/api/admin/audit/blobs/"+sum, nil, 403)
}
