package audit

import "context"

// sink stores batches of events. write must be idempotent in effect:
// when maybeSent is true some of evs may already be stored (an earlier
// attempt's fate is unknown), and the sink must not store them twice.
type sink interface {
	write(ctx context.Context, evs []Event, maybeSent bool) error
	close() error
}
