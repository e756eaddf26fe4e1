package responses

import (
	"context"
	"fmt"
	"time"

	"github.com/mindrouter/mindrouter/core/apierr"
	"github.com/mindrouter/mindrouter/core/auth"
	"github.com/mindrouter/mindrouter/core/config"
	"github.com/mindrouter/mindrouter/sdk/canon"
)

// StoredLimit bounds what one user keeps stored: the bytes their stored
// responses and conversation items added to the store (their JSON and
// the images first stored with them) and their number. 0: unlimited.
//
// Each write that stores something is checked before it is made, and a
// Responses request that will be stored before anything is generated:
// the stored state then costs a user something (their bound), where it
// once was free. The check reads the user's usage, summed from sizes the
// store records (store.StoredUsage), and is not in the write's
// transaction: concurrent writes of one user may together go over by
// what they add, which their requests in flight bound.
type StoredLimit struct {
	Bytes, Items int64
}

func (l StoredLimit) unlimited() bool { return l.Bytes <= 0 && l.Items <= 0 }

// storedLimits reads responses.max_stored_bytes, max_stored_items and
// the groups' overrides.
func storedLimits(c config.Responses) (StoredLimit, map[string]StoredLimit) {
	def := StoredLimit{Bytes: c.MaxStoredBytes, Items: c.MaxStoredItems}
	groups := make(map[string]StoredLimit, len(c.Groups))
	for name, g := range c.Groups {
		l := def
		if g.MaxStoredBytes != nil {
			l.Bytes = *g.MaxStoredBytes
		}
		if g.MaxStoredItems != nil {
			l.Items = *g.MaxStoredItems
		}
		groups[name] = l
	}
	return def, groups
}

func (k *Keeper) storedLimit(p *auth.Principal) StoredLimit {
	if l, ok := k.opts.GroupStored[p.Group]; ok {
		return l
	}
	return k.opts.Stored
}

// storedRetryAfter is the Retry-After of a refusal: the state frees when
// its user deletes some, or when untouched state expires.
const storedRetryAfter = 60

// admitStored refuses a write of bytes and items that would take p's
// stored state over its limit: a 413 when the write alone is larger than
// the limit, else a 429 saying how to make room.
func (k *Keeper) admitStored(ctx context.Context, p *auth.Principal, bytes, items int64) error {
	l := k.storedLimit(p)
	if l.unlimited() {
		return nil
	}
	if l.Bytes > 0 && bytes > l.Bytes || l.Items > 0 && items > l.Items {
		return apierr.New(canon.ErrRequestTooLarge, "stored_state_too_large", fmt.Sprintf(
			"This request would store %d bytes in %d items, more than this user may keep stored (%s).", bytes, items, l))
	}
	ctx, cancel := context.WithTimeout(ctx, storeTimeout)
	defer cancel()
	u, err := k.st.StoredUsage(ctx, p.UserID)
	if err != nil {
		return storeErr("read the size of the stored state", err)
	}
	if l.Bytes > 0 && u.Bytes+bytes > l.Bytes || l.Items > 0 && u.Items+items > l.Items {
		e := apierr.New(canon.ErrRateLimit, "stored_state_limit_exceeded", fmt.Sprintf(
			"This user's stored responses and conversations hold %d bytes in %d items; storing %d bytes in %d more would go over the limit (%s). "+
				"Delete some (DELETE /v1/responses/{id}, /v1/conversations/{id}) or send store: false; untouched state expires after %s.",
			u.Bytes, u.Items, bytes, items, l, k.opts.Retention.Round(time.Hour)))
		e.RetryAfter = storedRetryAfter
		return e
	}
	return nil
}

func (l StoredLimit) String() string {
	switch {
	case l.Bytes > 0 && l.Items > 0:
		return fmt.Sprintf("%d bytes, %d items", l.Bytes, l.Items)
	case l.Bytes > 0:
		return fmt.Sprintf("%d bytes", l.Bytes)
	}
	return fmt.Sprintf("%d items", l.Items)
}
