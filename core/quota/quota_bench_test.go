package quota

import (
	"context"
	"sync"
	"testing"

	"github.com/mindrouter/mindrouter/core/auth"
	"github.com/mindrouter/mindrouter/core/internal/testsvc"
)

// benchLimiters are the two set-ups the hot path runs in: memory only, and
// Redis-backed with leases (real clock: a batch lasts one lease).
func benchLimiters(b testing.TB) map[string]*Limiter {
	r := testsvc.StartRedis(b)
	return map[string]*Limiter{
		"local": New(Options{}),
		"redis": New(Options{Redis: redisClient(b, r)}),
	}
}

var benchLimits = auth.Limits{TokenBudget: 1 << 50, RPM: 1 << 30, MaxConcurrent: 1 << 20}

func admitReserveDone(tb testing.TB, l *Limiter, p *auth.Principal) {
	ctx := context.Background()
	tk, err := l.Admit(ctx, p)
	if err != nil {
		tb.Fatal(err)
	}
	if _, err := tk.Reserve(ctx, 200, 4200); err != nil {
		tb.Fatal(err)
	}
	tk.Done(1200)
}

func BenchmarkAdmitReserveDone(b *testing.B) {
	for name, l := range benchLimiters(b) {
		b.Run(name, func(b *testing.B) {
			p := principal(100, benchLimits)
			admitReserveDone(b, l, p) // the first request loads the user
			b.ReportAllocs()
			for b.Loop() {
				admitReserveDone(b, l, p)
			}
		})
		b.Run(name+"/parallel", func(b *testing.B) {
			b.ReportAllocs()
			var next int64
			b.RunParallel(func(pb *testing.PB) {
				mu.Lock()
				next++
				p := principal(1000+next, benchLimits) // a user per goroutine
				mu.Unlock()
				for pb.Next() {
					admitReserveDone(b, l, p)
				}
			})
		})
	}
}

func BenchmarkAdmitReserveDone_Unlimited(b *testing.B) {
	l := New(Options{})
	p := principal(101, auth.Limits{})
	admitReserveDone(b, l, p)
	b.ReportAllocs()
	for b.Loop() {
		admitReserveDone(b, l, p)
	}
}

var mu sync.Mutex
