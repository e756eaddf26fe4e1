package audit

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"regexp"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mindrouter/mindrouter/core/outcome"
)

// Options configure a Recorder.
type Options struct {
	Dir          string     // spool directory (required)
	ClickHouse   *CHOptions // nil: the embedded sink
	EmbeddedPath string     // SQLite file of the embedded sink, e.g. data/audit.db

	Content bool // record request and response bodies
	// Redact, when set, replaces every match in the bodies with
	// "[REDACTED]" before they are spooled (audit.content: redacted),
	// on the spool goroutine, never on a request's path.
	Redact          []*regexp.Regexp
	MaxContentBytes int // per body; default 64 KiB

	// BlobMinBytes: a base64 payload in the content (an image: data: URL,
	// Anthropic base64 source, Ollama images[]) at least this long, in
	// base64 characters, is replaced by a reference (BlobPrefix) and its
	// bytes stored once in the blobs table; default DefaultBlobMinBytes;
	// negative: never. The work is the spool goroutine's, not Observe's.
	BlobMinBytes int
	// MaxBlobBytes and MaxEventBlobBytes bound the decoded bytes stored
	// for one payload and for one event's; a payload past them keeps its
	// reference (hash, type, size) but not its bytes. Defaults
	// DefaultMaxBlobBytes, DefaultMaxEventBlobBytes.
	MaxBlobBytes      int
	MaxEventBlobBytes int

	FlushEvery time.Duration // longest a spooled event waits for its batch; default 1s
	// CommitDelay is how long the spool goroutine lingers for more events
	// when it wakes to a small group (fewer than commitGroup events), so
	// that events arriving one at a time share a write and an fsync
	// instead of paying one each; default DefaultCommitDelay; negative:
	// never linger (one commit per wake-up). It lengthens by as much the
	// window in which a SIGKILL can lose an accepted-but-unspooled event.
	// While events keep coming (a poll in the last pollIdle found some),
	// the goroutine wakes itself every CommitDelay instead of being woken
	// by the event that starts a group: that wake, a thread started on
	// the request's path, cost a c=1 request ≈ 25 µs of latency on the
	// 2-vCPU VM (bench/RESULTS.md).
	CommitDelay time.Duration
	// SyncEvery is how often the spool goroutine flushes (fdatasync) the
	// groups it has written: each group is written at once (a kill of
	// the process cannot lose it), and flushed within SyncEvery (a power
	// loss can lose what was not); default DefaultSyncEvery; negative:
	// flush every group.
	SyncEvery time.Duration
	BatchRows int // rows per batch; default 10000

	// MaxSpoolBytes bounds the spool's backlog (written, not yet in the
	// sink); default 1 GiB. Past it new events are dropped and counted
	// (Dropped), with an error logged every 10 s: the host's disk
	// matters more, and the events already spooled are kept.
	MaxSpoolBytes int64
	// MaxQueue bounds the events waiting in memory for the spool's next
	// group commit; default 65536. It fills only when the disk stalls;
	// past it events are dropped and counted like the above.
	MaxQueue int
	// SegmentBytes is the spool's segment size; default 64 MiB.
	SegmentBytes int64

	Replica string // this gateway's name, recorded in every row
	Log     *slog.Logger
}

// DefaultCommitDelay is Options.CommitDelay's default: at a serial
// client's rate (one request per few hundred µs) it gathers a handful of
// events per fsync, and it stays well inside the "few milliseconds" the
// durability promise allows.
const DefaultCommitDelay = 2 * time.Millisecond

// DefaultSyncEvery is Options.SyncEvery's default. A flush costs 130–240
// µs of CPU on the VM of bench/RESULTS.md; at a serial client's rate one
// a group was about a fifth of the audit's CPU a request.
const DefaultSyncEvery = 10 * time.Millisecond

// maxUnsyncedBytes flushes written groups early when they are this many.
const maxUnsyncedBytes = 4 << 20

// commitGroup is the group size at which the spool goroutine commits
// without lingering (or MaxQueue, if smaller): past it the fsync is
// shared widely enough already.
const commitGroup = 128

// Recorder is the audit's write path: Observe turns each Outcome into an
// Event and queues it in memory; a spool goroutine appends queued events
// to the spool with one write per group and flushes them every SyncEvery;
// a sink goroutine reads the flushed spool in order and writes batches to
// ClickHouse (or the embedded sink), acknowledging each in the spool's
// cursor.
//
// What a crash loses: an event is in the spool's file once the group
// commit that took it has written it: within CommitDelay plus two writes
// (one under way when it came, then its own) of Observe returning
// (Spooled counts them); from then on a SIGKILL or crash of the process
// cannot lose it. The written groups are flushed (fdatasync) at most
// SyncEvery apart, and only flushed records reach the sink, so a power
// loss can also lose what was written in the last SyncEvery. Before the
// write, a kill loses the events still in memory, never more than
// MaxQueue and in practice the last few milliseconds'. Everything spooled
// reaches the sink exactly once, whatever stops in between.
//
// Observe is safe for concurrent use and never blocks on I/O; Run and
// Close are called once each.
type Recorder struct {
	o    Options
	log  *slog.Logger
	sp   *spool
	sink sink
	db   *sql.DB // the embedded sink's, for the admin API

	blobs     blobLimits
	rawQueued atomic.Int64 // bytes of long bodies queued for prepare (keep)

	mu        sync.Mutex
	queue     []Event
	startedAt map[string]int // request id → index in queue of its admission event
	closed    bool

	// The spool goroutine's (Close's once Run has returned).
	spare    []Event
	buf      []byte
	ends     []int64       // the spool offset after each record of buf
	linger   *time.Timer   // CommitDelay's
	group    int           // commitGroup, or MaxQueue if smaller
	lastSync time.Time     // the spool goroutine's last flush
	wake     chan struct{} // the spool goroutine: the queue became non-empty, or reached commitGroup
	// polling: the spool goroutine wakes itself every CommitDelay (it
	// has had events lately), so a request whose event starts the queue
	// does not wake it (spoolLoop). wakes counts the sends on wake.
	polling atomic.Bool
	wakes   atomic.Uint64

	kick   chan struct{} // the sink goroutine: a full batch is spooled
	ho     handoff       // spooled events passed to the sink goroutine in memory
	handed atomic.Uint64 // events the sink goroutine took from ho, not from disk

	full      atomic.Bool // the spool is at MaxSpoolBytes
	spooled   atomic.Uint64
	written   atomic.Uint64
	dropped   atomic.Uint64
	damaged   atomic.Uint64
	pending   atomic.Int64 // events accepted, not yet in the sink
	dropLogAt atomic.Int64

	// stamps say when spool offsets were written (coalesced to one per
	// 100 ms), oldest first, down to the acknowledged offset: Lag.
	stampMu sync.Mutex
	stamps  []stamp

	stop     chan struct{} // closed by Close
	drainCtx context.Context
	running  atomic.Bool
	ran      chan struct{} // closed when Run returns
}

// New opens the spool in o.Dir (replaying what an earlier process left
// unsent) and the sink. It does not contact ClickHouse: a sink that is
// down only delays writes.
func New(o Options) (*Recorder, error) {
	if o.Dir == "" {
		return nil, errors.New("audit: the spool needs a directory (audit.spool_dir)")
	}
	if o.ClickHouse == nil && o.EmbeddedPath == "" {
		return nil, errors.New("audit: neither ClickHouse nor an embedded sink path is configured")
	}
	if o.MaxContentBytes <= 0 {
		o.MaxContentBytes = 64 << 10
	}
	if o.FlushEvery <= 0 {
		o.FlushEvery = time.Second
	}
	if o.CommitDelay == 0 {
		o.CommitDelay = DefaultCommitDelay
	}
	if o.SyncEvery == 0 {
		o.SyncEvery = DefaultSyncEvery
	}
	if o.BatchRows <= 0 {
		o.BatchRows = 10000
	}
	if o.MaxSpoolBytes <= 0 {
		o.MaxSpoolBytes = 1 << 30
	}
	if o.MaxQueue <= 0 {
		o.MaxQueue = 65536
	}
	if o.SegmentBytes <= 0 {
		o.SegmentBytes = 64 << 20
	}
	if o.Log == nil {
		o.Log = slog.Default()
	}
	blobs := blobLimits{min: o.BlobMinBytes, perBlob: o.MaxBlobBytes, perEvent: o.MaxEventBlobBytes}
	if blobs.min == 0 {
		blobs.min = DefaultBlobMinBytes
	}
	if blobs.perBlob <= 0 {
		blobs.perBlob = DefaultMaxBlobBytes
	}
	if blobs.perEvent <= 0 {
		blobs.perEvent = DefaultMaxEventBlobBytes
	}
	if !o.Content {
		blobs.min = -1
	}
	log := o.Log.With("component", "audit")
	r := &Recorder{o: o, log: log, blobs: blobs, queue: make([]Event, 0, 1024),
		wake: make(chan struct{}, 1), kick: make(chan struct{}, 1),
		stop: make(chan struct{}), ran: make(chan struct{})}
	sp, pending, err := openSpool(o.Dir, o.SegmentBytes, log)
	if err != nil {
		return nil, err
	}
	r.sp = sp
	r.group = min(commitGroup, o.MaxQueue)
	marks, err := r.markInterrupted(time.Now())
	if err != nil {
		sp.close()
		return nil, err
	}
	pending += marks
	r.pending.Store(pending)
	if pending > 0 {
		r.stamps = append(r.stamps, stamp{end: sp.durable.Load(), at: time.Now().UnixNano()})
		log.Info("audit: replaying the spool", "events", pending, "bytes", sp.bytes())
	}
	if o.ClickHouse != nil {
		r.sink, err = newCHSink(o.ClickHouse)
	} else {
		r.db, err = OpenEmbedded(o.EmbeddedPath)
		if err == nil {
			r.sink = newSQLiteSink(r.db, true)
		}
	}
	if err != nil {
		sp.close()
		return nil, err
	}
	r.full.Store(sp.bytes() >= o.MaxSpoolBytes)
	return r, nil
}

// EmbeddedDB is the embedded sink's database (for NewSQLiteSearcher), nil
// when the sink is ClickHouse.
func (r *Recorder) EmbeddedDB() *sql.DB { return r.db }

// Observe implements outcome.Observer: it copies what the Event needs
// from o and queues it. It never blocks on I/O; with the queue or the
// spool full it drops the event and counts it.
func (r *Recorder) Observe(o *outcome.Outcome) {
	var req, resp string
	cut := o.ResponseCut
	if r.o.Content {
		req, cut = r.keep(o.Request, cut)
		resp, cut = r.keep(o.Response, cut)
	}
	var decision string
	if len(o.Decision) > 0 {
		decision = string(o.Decision)
	}
	state := RowFinished
	if o.Panicked {
		state = RowPanic
	}
	if !r.enqueue(o, state, req, resp, cut, decision) {
		r.rawQueued.Add(-r.rawLen(req, resp))
	}
}

// Started implements outcome.Starter: the request's row, without content
// or response, goes to the spool at admission, so that a request the
// gateway never finishes is recorded (RowStarted, which the next start on
// this spool turns into RowInterrupted); Observe's event completes it.
func (r *Recorder) Started(o *outcome.Outcome) {
	var decision string
	if len(o.Decision) > 0 {
		decision = string(o.Decision)
	}
	r.enqueue(o, RowStarted, "", "", false, decision)
}

// enqueue queues o's event; false when it was dropped.
func (r *Recorder) enqueue(o *outcome.Outcome, state, req, resp string, cut bool, decision string) bool {
	r.mu.Lock()
	if r.closed || len(r.queue) >= r.o.MaxQueue || r.full.Load() {
		r.mu.Unlock()
		r.drop()
		return false
	}
	// A finished event whose admission event is still queued takes its
	// place: both would reach the spool in the same group commit, so the
	// admission event would only be encoded, written, read back and
	// dropped by the sink (collapse). The request's row is as durable as
	// before: the finished event goes out in the commit that would have
	// carried the admission event.
	var e *Event
	n := len(r.queue)
	if i, ok := r.startedAt[o.RequestID]; ok && state != RowStarted {
		delete(r.startedAt, o.RequestID)
		e = &r.queue[i]
		*e = Event{}
	} else {
		r.queue = append(r.queue, Event{})
		n = len(r.queue)
		e = &r.queue[n-1]
		r.pending.Add(1)
		if state == RowStarted && o.RequestID != "" {
			if r.startedAt == nil {
				r.startedAt = make(map[string]int, 64)
			}
			r.startedAt[o.RequestID] = n - 1
		}
	}
	fillEvent(e, o, r.o.Replica)
	e.RequestBody, e.ResponseBody, e.ContentTruncated, e.Decision, e.State = req, resp, cut, decision, state
	r.mu.Unlock()
	// The spool goroutine takes the whole queue each time, so it needs a
	// signal only when the queue starts (it was idle, or will find the
	// token after its commit) and when it reaches the group size (it may
	// be lingering for it). While it polls it needs none for the start:
	// a send here readies it, which on an idle machine starts a thread
	// (a futex wake, an IPI on a VM) on the request's path.
	if n == r.group || n == 1 && !r.polling.Load() {
		select {
		case r.wake <- struct{}{}:
			r.wakes.Add(1)
		default:
		}
	}
	return true
}

// keep copies a body for the event: up to MaxContentBytes or, when it is
// longer and images are taken out of content, up to MaxContentBytes plus
// the per-event blob allowance in base64 characters, which the spool
// goroutine cuts back to MaxContentBytes once the images are out. The
// copy is the only cost on the request path (no parsing), paid only by
// such long bodies, and the bytes they hold in the queue are bounded by
// maxRawQueued (past it a body is cut at MaxContentBytes here).
func (r *Recorder) keep(b []byte, cut bool) (string, bool) {
	n := r.o.MaxContentBytes
	if len(b) <= n {
		return string(b), cut
	}
	if r.blobs.min > 0 {
		m := min(len(b), n+r.blobs.perEvent/3*4+4096)
		if r.rawQueued.Add(int64(m)) <= maxRawQueued {
			return string(b[:m]), cut || m < len(b)
		}
		r.rawQueued.Add(-int64(m))
	}
	return string(b[:n]), true
}

// maxRawQueued bounds the bytes of bodies longer than MaxContentBytes
// waiting in the queue for their images to be taken out.
const maxRawQueued = 256 << 20

// rawLen is how many bytes of req and resp keep counted in rawQueued.
func (r *Recorder) rawLen(req, resp string) int64 {
	var n int64
	for _, b := range [...]string{req, resp} {
		if len(b) > r.o.MaxContentBytes {
			n += int64(len(b))
		}
	}
	return n
}

// Redacted replaces what an audit.redact pattern matched.
const Redacted = "[REDACTED]"

// prepare is the spool goroutine's work on an event before it is
// encoded: images out of the content, the redaction patterns applied,
// then a body that Observe kept longer than MaxContentBytes for them cut
// back to it.

func (r *Recorder) prepare(e *Event) {
	raw := r.rawLen(e.RequestBody, e.ResponseBody)
	r.blobs.extract(e)
	for _, re := range r.o.Redact {
		e.RequestBody = re.ReplaceAllString(e.RequestBody, Redacted)
		e.ResponseBody = re.ReplaceAllString(e.ResponseBody, Redacted)
	}
	if raw == 0 {
		return
	}
	n := r.o.MaxContentBytes
	if len(e.RequestBody) > n {
		e.RequestBody, e.ContentTruncated = e.RequestBody[:n], true
	}
	if len(e.ResponseBody) > n {
		e.ResponseBody, e.ContentTruncated = e.ResponseBody[:n], true
	}
	r.rawQueued.Add(-raw)
}

// fillEvent copies o's fields (strings are immutable; nothing aliases a
// server buffer) into e.
func fillEvent(e *Event, o *outcome.Outcome, replica string) {
	start := o.Start
	if start.IsZero() { // a path that never set it: the row still needs a time
		start = time.Now()
	}
	e.RequestID, e.Time, e.Replica = o.RequestID, start.UTC().Truncate(time.Microsecond), replica
	e.UserID, e.User, e.Group, e.KeyID, e.ClientIP, e.UserAgent = o.UserID, o.User, o.Group, o.KeyID, o.ClientIP, o.UserAgent
	e.Dialect, e.Route, e.Kind, e.Model, e.Stream = o.Dialect, o.Route, o.Kind, o.Model, o.Stream
	e.Backend, e.Node, e.GPUs, e.Attempts = o.Backend, o.Node, o.GPUs, uint8(min(max(o.Attempts, 0), math.MaxUint8))
	e.EnergyJ = o.EnergyJ
	e.Status, e.ErrorCode, e.Error = uint16(min(max(o.Status, 0), math.MaxUint16)), o.ErrorCode, o.Error
	e.FinishReason, e.ClientGone, e.State = o.FinishReason, o.ClientGone, RowFinished
	e.PromptTokens, e.CompletionTokens = u32(int64(o.Usage.Prompt)), u32(int64(o.Usage.Completion))
	e.ReasoningTokens, e.CachedTokens = u32(int64(o.Usage.Reasoning)), u32(int64(o.Usage.Cached))
	e.TokensEstimated = !o.Usage.Reported
	s := &o.Stages
	e.TotalUs = us(o.Duration)
	e.AuthUs, e.LimitUs, e.ReadUs = us(s[outcome.StageAuth]), us(s[outcome.StageLimit]), us(s[outcome.StageRead])
	e.CheckUs, e.DecodeUs, e.QueueUs = us(s[outcome.StageCheck]), us(s[outcome.StageDecode]), us(s[outcome.StageAdmit])
	e.EncodeUs, e.BackendUs, e.RespondUs = us(s[outcome.StageEncode]), us(s[outcome.StageBackend]), us(s[outcome.StageRespond])
	e.TTFTUs, e.Chunks = us(o.TTFT), u32(int64(o.Chunks))
	e.FairnessDelayUs, e.StreamPluginUs = us(o.FairnessDelay), us(o.StreamPlugin)
	e.BytesIn, e.BytesOut = uint64(max(o.BytesIn, 0)), uint64(max(o.BytesOut, 0))
}

// us is d in microseconds, clamped to uint32 (71 minutes).
func us(d time.Duration) uint32 { return u32(d.Microseconds()) }

func u32(v int64) uint32 { return uint32(min(max(v, 0), math.MaxUint32)) }

func (r *Recorder) drop() {
	n := r.dropped.Add(1)
	now := time.Now().UnixNano()
	last := r.dropLogAt.Load()
	if now-last >= int64(10*time.Second) && r.dropLogAt.CompareAndSwap(last, now) {
		r.log.Error("audit: events dropped: the spool is full or the disk has stalled",
			"dropped_total", n, "spool_bytes", r.sp.bytes(), "max_spool_bytes", r.o.MaxSpoolBytes)
	}
}

// Spooled is the number of events this process has appended to the spool
// (fsynced).
func (r *Recorder) Spooled() uint64 { return r.spooled.Load() }

// Written is the number of events this process has stored in the sink.
func (r *Recorder) Written() uint64 { return r.written.Load() }

// Pending is the number of accepted events not yet in the sink (queued,
// or spooled by this or an earlier process).
func (r *Recorder) Pending() int64 { return max(r.pending.Load(), 0) }

// SpoolBytes is the spool's backlog in bytes.
func (r *Recorder) SpoolBytes() int64 { return r.sp.bytes() }

// Dropped is the number of events refused because the queue or the spool
// was full, or Observe came after Close.
func (r *Recorder) Dropped() uint64 { return r.dropped.Load() }

// Damaged is the number of spool records skipped as unreadable.
func (r *Recorder) Damaged() uint64 { return r.damaged.Load() }

// Lag is the age of the oldest spooled event not yet in the sink (how
// long ago it was spooled, to within 100 ms; for events replayed from an
// earlier process, since this one opened the spool); 0 when none.
func (r *Recorder) Lag() time.Duration {
	r.stampMu.Lock()
	defer r.stampMu.Unlock()
	if len(r.stamps) == 0 {
		return 0
	}
	return time.Since(time.Unix(0, r.stamps[0].at))
}

type stamp struct{ end, at int64 }

func (r *Recorder) stampSpooled(end int64) {
	now := time.Now().UnixNano()
	r.stampMu.Lock()
	if n := len(r.stamps); n > 0 && now-r.stamps[n-1].at < int64(100*time.Millisecond) {
		r.stamps[n-1].end = end
	} else {
		r.stamps = append(r.stamps, stamp{end: end, at: now})
	}
	r.stampMu.Unlock()
}

func (r *Recorder) stampAcked(end int64) {
	r.stampMu.Lock()
	i := 0
	for i < len(r.stamps) && r.stamps[i].end <= end {
		i++
	}
	r.stamps = append(r.stamps[:0], r.stamps[i:]...)
	r.stampMu.Unlock()
}

// Run spools and writes until ctx is done (what is spooled then stays
// for the next start) or Close has drained the spool.
func (r *Recorder) Run(ctx context.Context) error {
	r.mu.Lock()
	if r.closed || r.running.Load() {
		r.mu.Unlock()
		return errors.New("audit: Run after Close, or twice")
	}
	r.running.Store(true)
	r.mu.Unlock()
	defer close(r.ran)
	spooled := make(chan struct{})
	go func() {
		defer close(spooled)
		r.spoolLoop(ctx)
	}()
	r.sinkLoop(ctx, spooled)
	<-spooled
	return nil
}

// Close stops accepting events, spools what is queued, lets Run write the
// spool to the sink until ctx is done, and closes the spool and the sink.
// What is left unsent is replayed by the next New on the same directory.
func (r *Recorder) Close(ctx context.Context) error {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return nil
	}
	r.closed = true
	r.drainCtx = ctx
	running := r.running.Load()
	r.mu.Unlock()
	close(r.stop)
	if running {
		<-r.ran // the loops return promptly once ctx is done
	}
	// Run's loops are done: what is still queued goes to the spool here.
	err := r.spoolQueued()
	if cerr := r.sink.close(); cerr != nil && err == nil {
		err = fmt.Errorf("audit: close sink: %w", cerr)
	}
	if cerr := r.sp.close(); cerr != nil && err == nil {
		err = cerr
	}
	return err
}

// spoolLoop is the group commit: it takes every queued event, appends
// them with one write and one fsync, and wakes the sink when a batch is
// full. Woken to a small group, it first lingers up to CommitDelay for
// more (commitWait). While it polls (poll) it waits CommitDelay on its own
// timer instead of for a wake.
func (r *Recorder) spoolLoop(ctx context.Context) {
	if r.o.CommitDelay > 0 {
		r.linger = time.NewTimer(time.Hour)
		r.linger.Stop()
		defer r.linger.Stop()
	}
	syncTimer := time.NewTimer(time.Hour)
	syncTimer.Stop()
	defer syncTimer.Stop()
	armed := false
	idle := 0 // polls in a row that found nothing
	for {
		var wait <-chan time.Time // nil: wait for a wake
		if r.polling.Load() {
			r.linger.Reset(r.o.CommitDelay)
			wait = r.linger.C
		}
		select {
		case <-r.wake:
		case <-wait:
		case <-syncTimer.C:
			armed = false
		case <-r.stop:
			if err := r.spoolQueued(); err != nil {
				r.log.Error("audit: spooling the last events failed", "err", err)
			}
			return
		case <-ctx.Done():
			if err := r.spoolQueued(); err != nil {
				r.log.Error("audit: spooling the last events failed", "err", err)
			}
			return
		}
		if wait != nil {
			r.linger.Stop()
		} else {
			r.commitWait(ctx)
		}
		for {
			more, err := r.spoolGroup()
			if err == nil {
				idle = r.poll(more, idle)
			}
			if err == nil {
				if due, wait := r.syncDue(); due {
					err = r.flush()
				} else if wait > 0 && !armed {
					syncTimer.Reset(wait)
					armed = true
				}
			}
			if err == nil {
				break
			}
			// A disk error: events wait in memory (bounded by MaxQueue)
			// or in the unflushed tail, and the write is retried.
			r.log.Error("audit: spool write failed; retrying", "err", err)
			select {
			case <-time.After(time.Second):
			case <-ctx.Done():
				return
			}
		}
	}
}

// pollIdle is how many empty polls in a row end polling: 20 ms at the
// default CommitDelay, after which the next event wakes the goroutine.
const pollIdle = 10

// poll decides whether the spool goroutine polls next (spooled: this
// round found events) and returns the new count of empty polls. Polling
// ends after pollIdle empty ones; an event queued while it ends is either
// seen here or finds polling off and wakes the goroutine (enqueue reads
// polling after queueing, this reads the queue after clearing it).
func (r *Recorder) poll(spooled bool, idle int) int {
	if r.linger == nil { // CommitDelay < 0: every event wakes it
		return 0
	}
	if spooled {
		r.polling.Store(true)
		return 0
	}
	if !r.polling.Load() {
		return 0
	}
	if idle++; idle < pollIdle {
		return idle
	}
	r.polling.Store(false)
	r.mu.Lock()
	n := len(r.queue)
	r.mu.Unlock()
	if n > 0 {
		r.polling.Store(true)
	}
	return 0
}

// commitWait lingers up to CommitDelay while fewer than commitGroup
// events are queued, so that events arriving one at a time share a
// commit. Observe's wake at commitGroup, Close and ctx end it early.
func (r *Recorder) commitWait(ctx context.Context) {
	if r.linger == nil {
		return
	}
	r.mu.Lock()
	n := len(r.queue)
	r.mu.Unlock()
	if n == 0 || n >= r.group {
		return
	}
	r.linger.Reset(r.o.CommitDelay)
	select {
	case <-r.linger.C:
	case <-r.wake:
	case <-r.stop:
	case <-ctx.Done():
	}
	r.linger.Stop()
}

// spoolQueued appends every queued event to the spool. On an error the
// events stay queued (in front of later ones).
func (r *Recorder) spoolQueued() error {
	for {
		more, err := r.spoolGroup()
		if err != nil {
			return err
		}
		if !more {
			return r.flush()
		}
	}
}

// flush makes the written records durable (one fdatasync) and hands them
// to the sink goroutine's view.
func (r *Recorder) flush() error {
	if r.sp.unsyncedBytes() == 0 && !r.sp.redo {
		return nil
	}
	if err := r.sp.sync(); err != nil {
		return err
	}
	r.lastSync = time.Now()
	r.stampSpooled(r.sp.durable.Load())
	return nil
}

// syncDue reports whether the written records should be flushed now:
// SyncEvery has passed since the last flush, or they are many (or the
// recorder flushes every group). Otherwise it returns how long until
// they are due.
func (r *Recorder) syncDue() (bool, time.Duration) {
	if r.sp.unsyncedBytes() == 0 && !r.sp.redo {
		return false, 0
	}
	if r.o.SyncEvery < 0 || r.sp.unsyncedBytes() >= maxUnsyncedBytes {
		return true, 0
	}
	wait := r.o.SyncEvery - time.Since(r.lastSync)
	return wait <= 0, wait
}

// spoolGroup is one group commit: it appends the events queued now to
// the spool; more is false when there were none. On an error the events
// stay queued (in front of later ones).
func (r *Recorder) spoolGroup() (more bool, err error) {
	r.mu.Lock()
	batch := r.queue
	if len(batch) == 0 {
		r.mu.Unlock()
		return false, nil
	}
	if r.spare == nil {
		r.spare = make([]Event, 0, 1024)
	}
	r.queue, r.spare = r.spare[:0], nil
	clear(r.startedAt)
	r.mu.Unlock()
	buf, ends, start := r.buf[:0], r.ends[:0], r.sp.end
	for i := range batch {
		r.prepare(&batch[i])
		at := len(buf)
		buf = append(buf, 0, 0, 0, 0, 0, 0, 0, 0) // the header, filled by frameRecord
		buf = appendEvent(buf, &batch[i])
		frameRecord(buf, at)
		ends = append(ends, start+int64(len(buf)))
		asDecoded(&batch[i])
	}
	r.buf, r.ends = buf, ends
	if err := r.sp.writeRecords(buf); err != nil {
		r.mu.Lock()
		r.queue = append(batch, r.queue...)
		for id, i := range r.startedAt { // those queued since moved back by the batch
			r.startedAt[id] = i + len(batch)
		}
		r.mu.Unlock()
		return true, err
	}
	r.ho.add(batch, start, ends) // the sink takes them once durable
	r.spooled.Add(uint64(len(batch)))
	if r.sp.written() >= r.o.MaxSpoolBytes && !r.full.Swap(true) {
		r.log.Error("audit: the spool is full; new events are dropped until the sink catches up",
			"spool_bytes", r.sp.written(), "max_spool_bytes", r.o.MaxSpoolBytes)
	}
	if r.pending.Load() >= int64(r.o.BatchRows) {
		select {
		case r.kick <- struct{}{}:
		default:
		}
	}
	clear(batch) // drop the strings
	r.spare = batch[:0]
	return true, nil
}

// sinkLoop writes the spool to the sink in batches of up to BatchRows,
// at least every FlushEvery, retrying with backoff while the sink is
// down. It returns when ctx is done, or after Close once the spool goroutine
// has finished and the spool is drained (or Close's ctx is done).
func (r *Recorder) sinkLoop(ctx context.Context, spooled <-chan struct{}) {
	tick := time.NewTicker(r.o.FlushEvery)
	defer tick.Stop()
	var evs []Event
	draining := false
	for {
		if !draining {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			case <-r.kick:
			case <-r.stop:
				<-spooled
				draining = true
			}
		}
		wctx := ctx
		if draining {
			r.mu.Lock()
			wctx = r.drainCtx
			r.mu.Unlock()
			if wctx.Err() != nil || ctx.Err() != nil {
				return
			}
		}
		// Write whole batches while there are any.
		for {
			var err error
			var end int64
			var damaged int
			start := r.sp.pos
			var limit int64
			var held bool
			if evs, end, limit, held = r.ho.take(evs, start, r.o.BatchRows, maxBatchBytes, r.sp.durable.Load()); held {
				r.sp.pos = end
				r.handed.Add(uint64(len(evs)))
			} else {
				evs, end, damaged, err = r.sp.readBatch(evs, r.o.BatchRows, limit)
			}
			if damaged > 0 {
				r.damaged.Add(uint64(damaged))
				r.pending.Add(-int64(damaged))
			}
			if err != nil {
				r.log.Error("audit: reading the spool failed", "err", err)
				r.sp.rewind()
				break
			}
			if len(evs) == 0 {
				if end > start { // only damaged records: move past them
					if r.sp.ack(end) == nil {
						r.stampAcked(end)
					}
				}
				break
			}
			if !r.writeBatch(wctx, evs, start, end) {
				r.sp.rewind()
				if draining || ctx.Err() != nil {
					return
				}
				break
			}
			if len(evs) < r.o.BatchRows && end-start < maxBatchBytes && !draining {
				break // caught up: the rest waits for its batch to fill or the tick
			}
		}
		if draining && (r.sp.bytes() == 0 || wctx.Err() != nil) {
			return
		}
	}
}

// writeBatch sends one batch, retrying with backoff until it is stored
// or ctx is done, then acknowledges it in the spool. maybeSent holds
// from the first failure on, and for a batch the previous process may
// have sent before it stopped.
func (r *Recorder) writeBatch(ctx context.Context, evs []Event, start, end int64) bool {
	maybeSent := start < r.sp.sending
	if err := r.sp.markSending(end); err != nil {
		r.log.Error("audit: spool cursor", "err", err)
		return false
	}
	n := len(evs)
	evs = collapse(evs)
	backoff := 100 * time.Millisecond
	for failures := 0; ; failures++ {
		err := r.sink.write(ctx, evs, maybeSent)
		if err == nil {
			break
		}
		maybeSent = true
		if failures == 0 || failures%10 == 0 {
			r.log.Error("audit: sink write failed; events wait in the spool", "err", err,
				"pending", r.pending.Load(), "spool_bytes", r.sp.bytes(), "failures", failures+1)
		}
		select {
		case <-ctx.Done():
			return false
		case <-time.After(backoff):
		}
		backoff = min(backoff*2, 2*time.Second)
	}
	if err := r.sp.ack(end); err != nil {
		// Stored but not acknowledged: sending covers it, so the next
		// attempt checks before resending.
		r.log.Error("audit: spool cursor", "err", err)
		return false
	}
	r.stampAcked(end)
	r.written.Add(uint64(n))
	r.pending.Add(-int64(n))
	if r.full.Load() && r.sp.bytes() < r.o.MaxSpoolBytes*9/10 {
		r.full.Store(false)
		r.log.Info("audit: the spool has room again; accepting events", "spool_bytes", r.sp.bytes())
	}
	return true
}
