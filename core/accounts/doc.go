// Package accounts turns API keys into principals: an auth.Authenticator
// over the store with an in-memory cache, revocation across replicas
// through Redis, key use counting, Argon2id for imported keys, and the
// ADMIN_API_KEY bootstrap.
//
// # Keys
//
// Issued keys ("mr2_" and 43 random characters, see NewKey) are stored by
// SHA-256 and found by one indexed read. Imported keys (from the reference
// implementation, whose key_hash column is Argon2id over the key's hex
// SHA-256) are found by their 12-character prefix and verified with
// Argon2id, at most two at a time. Either way a verified key is cached by
// its SHA-256, so Argon2id runs once per cache period, not per request.
// Wrong keys sharing an imported key's prefix run Argon2id at most eight
// times a minute per prefix (argonlimit.go): a key's owner knows its
// prefix and must not be able to keep the CPU busy with wrong tails.
// Anything not starting with "mr2_", shorter than 20 or longer than 256
// bytes is refused without a lookup.
//
// # Freshness
//
// A cache entry is what the store said when the read began. It is trusted
// for CacheTTL (default 60 s) while the revocation subscription is live:
// the admin API calls Invalidate, InvalidateUser or InvalidateAll after
// every change, which drops entries here and publishes on Channel, and
// every replica drops them when the message arrives (milliseconds). The
// subscription counts as live while Redis has answered a heartbeat in the
// last 750 ms; at every (re)subscription the whole cache is emptied,
// since messages may have been missed. With no Redis, or the subscription
// down, an entry older than one second is read again, so a revoked or
// expired key, or a deactivated user, stops working within a second on
// every replica either way. Key expiry is checked at every request
// against the clock. A load that raced an invalidation is used for the
// requests that waited for it but not cached.
//
// If the store cannot be read, an entry is still served while it is
// younger than StaleIfError (default 5 min) when the subscription is
// live, since a revocation made meanwhile still arrives through Redis and
// drops it, or younger than CacheTTL when it is not; for a second after a
// failed read such an entry is served without asking the store again, so
// a store that hangs does not hold every request for a lookup timeout.
// The error is returned when there is no such entry (an unseen or
// invalidated key): the server answers 503, not 401.
//
// # Floods
//
// Unknown keys are remembered for a second in a fixed 4096-slot table, so
// repeating a bad key costs no store read; concurrent misses for one key
// share one read (singleflight), and at most 8 reads run at once, so a
// flood of distinct random keys waits here rather than in the database.
//
// # Use counts
//
// Each successful authentication adds one to the key's in-memory counter;
// Run writes the counts and last-used times (to the second) to the store
// every 5 s and when it stops.
package accounts
