package admin

import (
	"github.com/mindrouter/mindrouter/core/allowlist"
	"github.com/mindrouter/mindrouter/core/logredact"
)

// checkModelAccess validates a model allowlist given to the API (400
// naming the field and the entry at fault).
func checkModelAccess(field string, patterns []string) error {
	if err := allowlist.Check(patterns); err != nil {
		return badRequest(logredact.String(logredact.Truncate("field "+field+": "+err.Error(), logredact.MaxEcho)))
	}
	return nil
}
