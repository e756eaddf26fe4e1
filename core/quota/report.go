package quota

import "time"

// Report is a user's quota standing, for /api/me/usage and the admin API.
type Report struct {
	UserID             int64     `json:"user_id"`
	PeriodStart        time.Time `json:"period_start"`
	PeriodEnd          time.Time `json:"period_end"`
	TokenBudget        int64     `json:"token_budget"` // 0: unlimited
	TokensUsed         int64     `json:"tokens_used"`
	TokensReserved     int64     `json:"tokens_reserved"` // held by requests in flight
	LifetimeTokens     int64     `json:"lifetime_tokens"`
	RPM                int       `json:"rpm_limit"` // 0: unlimited
	RequestsLastMinute int       `json:"requests_last_minute"`
	MaxConcurrent      int       `json:"max_concurrent"` // 0: unlimited
	InFlight           int       `json:"in_flight"`
}
