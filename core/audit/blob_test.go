package audit

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"image"
	"image/color"
	"image/png"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"

	"github.com/mindrouter/mindrouter/core/internal/testsvc"
	"github.com/mindrouter/mindrouter/core/internal/testutil"
)

// testPNG is a real PNG of n×n noise pixels (about 4n² bytes).
func testPNG(t testing.TB, n int, seed uint64) []byte {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, n, n))
	rng := rand.New(rand.NewPCG(seed, 1))
	for i := range img.Pix {
		img.Pix[i] = uint8(rng.Uint32())
	}
	img.Set(0, 0, color.RGBA{1, 2, 3, 255})
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func hashOf(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

func refOf(b []byte, mediaType string) string {
	return "mr-blob:sha256:" + hashOf(b) + ";type=" + mediaType + ";size=" + strconv.Itoa(len(b))
}

func TestExtractBlobs(t *testing.T) {
	img, img2 := testPNG(t, 24, 1), testPNG(t, 24, 2)
	b64, b642 := base64.StdEncoding.EncodeToString(img), base64.StdEncoding.EncodeToString(img2)
	small := base64.StdEncoding.EncodeToString(testPNG(t, 1, 3))
	text := base64.StdEncoding.EncodeToString(bytes.Repeat([]byte("not an image, just text. "), 100))
	big := testPNG(t, 80, 4) // over perBlob below
	lim := blobLimits{min: 1024, perBlob: 20 << 10, perEvent: len(img) + len(img2) + 10}
	for _, tc := range []struct {
		name, in, want string
		blobs          [][]byte
		cut            bool
	}{
		{name: "openai data URL",
			in:    `{"messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"data:image/png;base64,` + b64 + `"}}]}]}`,
			want:  `{"messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"` + refOf(img, "image/png") + `"}}]}]}`,
			blobs: [][]byte{img}},
		{name: "anthropic base64 source, media type sniffed",
			in:    `{"content":[{"type":"image","source":{"type":"base64","media_type":"image/png","data":"` + b64 + `"}}]}`,
			want:  `{"content":[{"type":"image","source":{"type":"base64","media_type":"image/png","data":"` + refOf(img, "image/png") + `"}}]}`,
			blobs: [][]byte{img}},
		{name: "ollama images, the same image twice stored once",
			in:    `{"messages":[{"role":"user","content":"x","images":["` + b64 + `", "` + b642 + `","` + b64 + `"]}]}`,
			want:  `{"messages":[{"role":"user","content":"x","images":["` + refOf(img, "image/png") + `", "` + refOf(img2, "image/png") + `","` + refOf(img, "image/png") + `"]}]}`,
			blobs: [][]byte{img, img2}},
		{name: "escaped slashes",
			in:    `{"images":["` + strings.ReplaceAll(b64, "/", `\/`) + `"]}`,
			want:  `{"images":["` + refOf(img, "image/png") + `"]}`,
			blobs: [][]byte{img}},
		{name: "below the threshold and text under data: kept",
			in:   `{"images":["` + small + `"],"data":"` + text + `","content":"` + b64 + `"}`,
			want: `{"images":["` + small + `"],"data":"` + text + `","content":"` + b64 + `"}`},
		{name: "over the per-blob bound: referenced, not stored",
			in:    `{"url":"data:image/png;base64,` + base64.StdEncoding.EncodeToString(big) + `"}`,
			want:  `{"url":"` + refOf(big, "image/png") + `;not-stored"}`,
			blobs: nil},
		{name: "over the per-event bound: the third is not stored",
			in:    `{"images":["` + b64 + `","` + b642 + `","` + base64.StdEncoding.EncodeToString(testPNG(t, 24, 5)) + `"]}`,
			want:  `{"images":["` + refOf(img, "image/png") + `","` + refOf(img2, "image/png") + `","` + refOf(testPNG(t, 24, 5), "image/png") + `;not-stored"]}`,
			blobs: [][]byte{img, img2}},
		{name: "SSE response",
			in:    "data: {\"delta\":{\"image\":\"data:image/webp;base64," + b64 + "\"}}\n\ndata: [DONE]\n\n",
			want:  "data: {\"delta\":{\"image\":\"" + refOf(img, "image/webp") + "\"}}\n\ndata: [DONE]\n\n",
			blobs: [][]byte{img}},
		{name: "cut off by max_content_bytes",
			in:   (`{"model":"m","images":["` + b64 + `"]}`)[:len(b64)/2],
			want: `{"model":"m","images":["mr-blob:cut"`, cut: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := lim
			got, blobs, cut := extractBlobs(tc.in, &l, nil)
			if got != tc.want {
				t.Errorf("content:\n got %.300s\nwant %.300s", got, tc.want)
			}
			if cut != tc.cut {
				t.Errorf("cut %v, want %v", cut, tc.cut)
			}
			if len(blobs) != len(tc.blobs) {
				t.Fatalf("%d blobs, want %d", len(blobs), len(tc.blobs))
			}
			for i, b := range blobs {
				if b.Data != string(tc.blobs[i]) || b.SHA256 != hashOf(tc.blobs[i]) || b.MediaType == "" {
					t.Errorf("blob %d: %s %s, %d bytes", i, b.SHA256, b.MediaType, len(b.Data))
				}
			}
			if !tc.cut && strings.HasPrefix(tc.in, "{") && !json.Valid([]byte(got)) {
				t.Errorf("the content is no longer JSON: %.300s", got)
			}
		})
	}
}

func TestCodecRoundTripBlobs(t *testing.T) {
	var e Event
	fillEvent(&e, testOutcome(5), "gw-2")
	e.Time = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	e.Blobs = []Blob{{SHA256: "ab", MediaType: "image/png", Data: "\x89PNG\x00"}, {SHA256: "cd", MediaType: "image/jpeg", Data: "x"}}
	e.FairnessDelayUs, e.StreamPluginUs = 1500, 70
	b := appendEvent(nil, &e)
	var got Event
	if err := decodeEvent(b, &got); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, e) {
		t.Errorf("round trip:\n got %+v\nwant %+v", got, e)
	}
	for cut := range len(b) - 1 {
		if err := decodeEvent(b[:cut], &got); err == nil {
			t.Fatalf("a record cut to %d bytes decoded", cut)
		}
	}
}

// Images in content reach the sink as references, their bytes once in
// the blobs table, readable by hash: through the embedded sink and
// ClickHouse.
func TestRecorderBlobs(t *testing.T) {
	img, img2 := testPNG(t, 32, 7), testPNG(t, 32, 8)
	url := "data:image/png;base64," + base64.StdEncoding.EncodeToString(img)
	for _, sink := range []string{"embedded", "clickhouse"} {
		t.Run(sink, func(t *testing.T) {
			o := Options{Dir: t.TempDir(), Content: true, MaxContentBytes: 1 << 20, FlushEvery: 20 * time.Millisecond, Log: testLog(t)}
			var searcher Searcher
			var conn driver.Conn
			if sink == "clickhouse" {
				chs := testsvc.StartClickHouse(t)
				o.ClickHouse = chOptions(chs)
				conn = chs.Open(t)
				searcher = NewClickHouseSearcher(conn, chs.Database)
			} else {
				o.EmbeddedPath = filepath.Join(t.TempDir(), "audit.db")
			}
			r, err := New(o)
			if err != nil {
				t.Fatal(err)
			}
			if searcher == nil {
				searcher = NewSQLiteSearcher(r.EmbeddedDB())
			}
			start(t, r)
			waitRunning(t, r)
			for i := range 3 { // the same image in three requests, another in the second
				oc := testOutcome(i)
				oc.Request = []byte(`{"model":"m","messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"` + url + `"}}]}]}`)
				if i == 1 {
					oc.Response = []byte(`{"images":["` + base64.StdEncoding.EncodeToString(img2) + `"]}`)
				}
				r.Observe(oc)
			}
			ctx := context.Background()
			var e Event
			if !testutil.Poll(30*time.Second, func() bool {
				e, err = searcher.Get(ctx, "req-00000002")
				return err == nil && r.Pending() == 0
			}) {
				t.Fatalf("not stored: %v, %d pending", err, r.Pending())
			}
			if strings.Contains(e.RequestBody, "base64") || !strings.Contains(e.RequestBody, `"url":"`+refOf(img, "image/png")+`"`) {
				t.Errorf("stored request body %.300s", e.RequestBody)
			}
			e1, err := searcher.Get(ctx, "req-00000001")
			if err != nil || e1.ResponseBody != `{"images":["`+refOf(img2, "image/png")+`"]}` {
				t.Errorf("stored response %q: %v", e1.ResponseBody, err)
			}
			br := searcher.(BlobReader)
			for _, want := range [][]byte{img, img2} {
				b, err := br.Blob(ctx, hashOf(want))
				if err != nil || b.Data != string(want) || b.MediaType != "image/png" {
					t.Errorf("blob %s: %s, %d bytes, %v", hashOf(want), b.MediaType, len(b.Data), err)
				}
			}
			if _, err := br.Blob(ctx, strings.Repeat("0", 64)); !errors.Is(err, ErrNotFound) {
				t.Errorf("unknown blob: %v", err)
			}
			if _, err := br.Blob(ctx, "x'; DROP TABLE blobs"); !errors.Is(err, ErrBadHash) {
				t.Errorf("bad hash: %v", err)
			}
			// docs/audit.md's query resolves request 1's two references.
			var sums []string
			if sink == "clickhouse" {
				rows, err := conn.Query(ctx, docBlobQuery(t, sink))
				if err != nil {
					t.Fatal(err)
				}
				for rows.Next() {
					var sum, mt string
					var size uint64
					if err := rows.Scan(&sum, &mt, &size); err != nil {
						t.Fatal(err)
					}
					sums = append(sums, sum)
				}
				rows.Close()
			} else {
				rows, err := r.EmbeddedDB().QueryContext(ctx, docBlobQuery(t, sink))
				if err != nil {
					t.Fatal(err)
				}
				for rows.Next() {
					var sum, mt string
					var size int64
					if err := rows.Scan(&sum, &mt, &size); err != nil {
						t.Fatal(err)
					}
					sums = append(sums, sum)
				}
				rows.Close()
			}
			want := []string{hashOf(img), hashOf(img2)}
			slices.Sort(want)
			if !slices.Equal(sums, want) {
				t.Errorf("the documented query found %v, want %v", sums, want)
			}
			if sink == "clickhouse" { // stored once although three requests carried it
				var n uint64
				if err := conn.QueryRow(ctx, "SELECT count() FROM "+o.ClickHouse.Database+".blobs").Scan(&n); err != nil || n != 2 {
					t.Errorf("%d blob rows, want 2: %v", n, err)
				}
			}
		})
	}
}

// docBlobQuery is docs/audit.md's query resolving a request's blobs, for
// sink ("clickhouse" or "sqlite").
func docBlobQuery(t *testing.T, sink string) string {
	t.Helper()
	raw, err := os.ReadFile("../../docs/audit.md")
	if err != nil {
		t.Fatal(err)
	}
	if sink == "embedded" {
		sink = "sqlite"
	}
	for _, m := range regexp.MustCompile("(?s)```sql\n-- blobs: (\\w+)\n(.*?)```").FindAllStringSubmatch(string(raw), -1) {
		if m[1] == sink {
			return strings.TrimSuffix(strings.TrimSpace(m[2]), ";")
		}
	}
	t.Fatalf("docs/audit.md has no blobs query for %s", sink)
	return ""
}

// A body longer than max_content_bytes because of an image keeps the
// image whole (stored as a blob) and its text cut at the bound; a long
// body without images is cut as before.
func TestRecorderLongBodies(t *testing.T) {
	img := testPNG(t, 64, 9) // about 16 KiB
	r, err := New(Options{Dir: t.TempDir(), EmbeddedPath: filepath.Join(t.TempDir(), "audit.db"), Content: true,
		MaxContentBytes: 4096, FlushEvery: 20 * time.Millisecond, Log: testLog(t)})
	if err != nil {
		t.Fatal(err)
	}
	start(t, r)
	waitRunning(t, r)
	text := strings.Repeat("words ", 1000)
	o := testOutcome(1)
	o.Request = []byte(`{"model":"m","messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"data:image/png;base64,` +
		base64.StdEncoding.EncodeToString(img) + `"}},{"type":"text","text":"` + text + `"}]}]}`)
	r.Observe(o)
	o = testOutcome(2)
	o.Request = []byte(`{"model":"m","messages":[{"role":"user","content":"` + text + `"}]}`)
	r.Observe(o)
	s := NewSQLiteSearcher(r.EmbeddedDB())
	ctx := context.Background()
	testutil.WaitFor(t, "nothing pending", 30*time.Second, func() bool { return r.Pending() == 0 })
	e, err := s.Get(ctx, "req-00000001")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(e.RequestBody, `{"model":"m","messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"`+refOf(img, "image/png")+`"}}`) ||
		len(e.RequestBody) != 4096 || !e.ContentTruncated {
		t.Errorf("image request stored as %d bytes, truncated %v: %.200s", len(e.RequestBody), e.ContentTruncated, e.RequestBody)
	}
	if b, err := s.(BlobReader).Blob(ctx, hashOf(img)); err != nil || b.Data != string(img) {
		t.Errorf("blob: %d bytes, %v", len(b.Data), err)
	}
	e, err = s.Get(ctx, "req-00000002")
	if err != nil || len(e.RequestBody) != 4096 || !e.ContentTruncated {
		t.Errorf("text request stored as %d bytes, truncated %v: %v", len(e.RequestBody), e.ContentTruncated, err)
	}
	if n := r.rawQueued.Load(); n != 0 {
		t.Errorf("rawQueued %d after everything was spooled", n)
	}
}
