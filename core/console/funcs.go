package console

import (
	"fmt"
	"html/template"
	"time"
)

// funcs are the templates' helpers.
func (c *Console) funcs() template.FuncMap {
	return template.FuncMap{
		"when": func(t any) string {
			switch t := t.(type) {
			case time.Time:
				if t.IsZero() {
					return "—"
				}
				return t.UTC().Format("2006-01-02 15:04 UTC")
			case *time.Time:
				if t == nil || t.IsZero() {
					return "never"
				}
				return t.UTC().Format("2006-01-02 15:04 UTC")
			}
			return fmt.Sprint(t)
		},
		"human": func(n any) string {
			switch n := n.(type) {
			case int64:
				return humanInt(n)
			case int:
				return humanInt(int64(n))
			case uint32:
				return humanInt(int64(n))
			}
			return fmt.Sprint(n)
		},
		"ms":  func(us uint32) string { return fmt.Sprintf("%.0f ms", float64(us)/1000) },
		"add": func(a, b uint32) int64 { return int64(a) + int64(b) },
		"has": func(list []string, s string) bool {
			for _, e := range list {
				if e == s {
					return true
				}
			}
			return false
		},
		"limit": func(n any) string {
			if fmt.Sprint(n) == "0" {
				return "unlimited"
			}
			return fmt.Sprint(n)
		},
	}
}
