package sched

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"time"
)

// svcEntry is one user's service as this replica knows it: the fleet's
// decayed counter when last read, plus what was served here since.
type svcEntry struct {
	fleet float64   // the fleet's counter, as of at
	at    time.Time // when it was read
	pend  float64   // served here, not yet pushed
	used  time.Time // last charge or key
}

// charge adds cost to user's service (Fair's mutex held; no I/O).
func (fl *Fleet) charge(user string, cost float64) {
	now := time.Now()
	fl.svcMu.Lock()
	e := fl.svc[user]
	if e == nil {
		e = &svcEntry{at: now}
		fl.svc[user] = e
	}
	e.pend += cost
	e.used = now
	fl.svcMu.Unlock()
}

// key is user's fleet-wide fair-share key: its decayed service divided by
// its weight, lower first (Fair's mutex held; no I/O).
func (fl *Fleet) key(user string, weight float64) float64 {
	now := time.Now()
	fl.svcMu.Lock()
	defer fl.svcMu.Unlock()
	e := fl.svc[user]
	if e == nil {
		e = &svcEntry{at: now}
		fl.svc[user] = e
	}
	e.used = now
	v := e.fleet*math.Exp2(-float64(now.Sub(e.at))/float64(fl.halfLife)) + e.pend
	if weight <= 0 {
		weight = 1
	}
	return v / weight
}

// flushService pushes what was served here and re-reads the fleet's
// counters of the users seen lately, in one round trip.
func (fl *Fleet) flushService(ctx context.Context) error {
	now := time.Now()
	fl.svcMu.Lock()
	var users []string
	var sent []float64
	args := []any{now.UnixMilli(), fl.halfLife.Milliseconds(), (10 * fl.halfLife).Milliseconds()}
	for u, e := range fl.svc {
		switch {
		case e.pend != 0 || now.Sub(e.used) < fleetSvcRead:
			users = append(users, u)
			sent = append(sent, e.pend)
			args = append(args, u, strconv.FormatFloat(e.pend, 'g', -1, 64))
		case now.Sub(e.used) > fleetSvcForget:
			delete(fl.svc, u)
		}
	}
	fl.svcMu.Unlock()
	if len(users) == 0 {
		return nil
	}
	cctx, cancel := context.WithTimeout(ctx, fleetCall)
	defer cancel()
	res, err := serviceScript.Run(cctx, fl.rdb, []string{fl.prefix + "svc", fl.prefix + "svct"}, args...).StringSlice()
	if err != nil {
		return fmt.Errorf("push users' served tokens: %w", err)
	}
	if len(res) != len(users) {
		return fmt.Errorf("push users' served tokens: %d values for %d users", len(res), len(users))
	}
	fl.svcMu.Lock()
	for i, u := range users {
		v, err := strconv.ParseFloat(res[i], 64)
		if err != nil {
			continue
		}
		if e := fl.svc[u]; e != nil {
			e.fleet, e.at = v, now
			e.pend -= sent[i]
		}
	}
	fl.svcMu.Unlock()
	return nil
}
