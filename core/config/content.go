package config

import (
	"fmt"
	"regexp"

	"go.yaml.in/yaml/v3"
)

// ContentPolicy is audit.content: what the audit keeps of bodies.
type ContentPolicy string

const (
	ContentFull     ContentPolicy = "" // the default, "full" or true
	ContentMetadata ContentPolicy = "metadata"
	ContentRedacted ContentPolicy = "redacted"
)

// UnmarshalYAML takes full, metadata or redacted, and the booleans of
// earlier configs (true: full, false: metadata).
func (p *ContentPolicy) UnmarshalYAML(n *yaml.Node) error {
	var b bool
	if n.Tag == "!!bool" && n.Decode(&b) == nil {
		if b {
			*p = ContentFull
		} else {
			*p = ContentMetadata
		}
		return nil
	}
	var s string
	if err := n.Decode(&s); err != nil {
		return err
	}
	switch s {
	case "full":
		*p = ContentFull
	case "metadata":
		*p = ContentMetadata
	case "redacted":
		*p = ContentRedacted
	default:
		return fmt.Errorf("line %d: audit.content: %q is not one of full, metadata, redacted", n.Line, s)
	}
	return nil
}

// DefaultRedact are the patterns content: redacted removes when
// audit.redact names none: e-mail addresses, API keys and tokens of the
// usual shapes (this gateway's mr2_, OpenAI's sk-, bearer tokens, JWTs),
// IPv4 addresses, and card-like runs of 13 to 19 digits.
var DefaultRedact = []string{
	`[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,}`,
	`\b(?:mr2_|sk-|sk_|pk_|rk_|ghp_|xox[bp]-)[A-Za-z0-9_-]{12,}`,
	`(?i)bearer\s+[A-Za-z0-9._~+/=-]{12,}`,
	`\beyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}`,
	`\b(?:\d{1,3}\.){3}\d{1,3}\b`,
	`\b(?:\d[ -]?){12,18}\d\b`,
}

// AuditRedact compiles the redaction patterns (nil unless content:
// redacted). Validate has compiled them once, so an error here is not
// expected.
func (c *Config) AuditRedact() ([]*regexp.Regexp, error) {
	if c.Audit.Content != ContentRedacted {
		return nil, nil
	}
	pats := c.Audit.Redact
	if len(pats) == 0 {
		pats = DefaultRedact
	}
	out := make([]*regexp.Regexp, 0, len(pats))
	for i, p := range pats {
		re, err := regexp.Compile(p)
		if err != nil {
			return nil, fmt.Errorf("audit.redact[%d]: %w", i, err)
		}
		out = append(out, re)
	}
	return out, nil
}
