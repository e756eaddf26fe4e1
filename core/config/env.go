package config

import (
	"bytes"
	"fmt"
	"os"
	"regexp"
	"strings"

	"go.yaml.in/yaml/v3"
)

// envRef is a reference to an environment variable inside a scalar value:
// ${NAME}, or ${NAME:-default} used when NAME is unset or empty. Secrets
// (the store DSN, Redis and ClickHouse passwords) stay out of the file and
// come from a Kubernetes Secret or a compose env_file this way.
var envRef = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}`)

// expandEnv replaces environment references in the scalar values of a YAML
// document, never in keys or comments, so a value holding YAML's special
// characters (a DSN's ':' and '@', a password's '#') cannot change the
// document's structure. An unset reference without a default is an error
// naming the variable and the line: a gateway must not start with an empty
// password it was told to read. "$${" writes a literal "${".
func expandEnv(b []byte) ([]byte, error) {
	if !bytes.Contains(b, []byte("${")) {
		return b, nil
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(b, &doc); err != nil {
		return nil, err
	}
	var errs []string
	var walk func(n *yaml.Node)
	walk = func(n *yaml.Node) {
		if n.Kind == yaml.ScalarNode && strings.Contains(n.Value, "${") {
			n.Value = expandScalar(n.Value, n.Line, &errs)
			if n.Tag == "!!null" || n.Tag == "!!int" || n.Tag == "!!bool" || n.Tag == "!!float" {
				n.Tag = "" // let the target field's type decide
			}
		}
		for i, c := range n.Content {
			if n.Kind == yaml.MappingNode && i%2 == 0 {
				continue // a key
			}
			walk(c)
		}
	}
	walk(&doc)
	if len(errs) > 0 {
		return nil, fmt.Errorf("environment: %s", strings.Join(errs, "; "))
	}
	return yaml.Marshal(&doc)
}

func expandScalar(s string, line int, errs *[]string) string {
	const lit = "\x00lit\x00"
	s = strings.ReplaceAll(s, "$${", lit)
	s = envRef.ReplaceAllStringFunc(s, func(ref string) string {
		m := envRef.FindStringSubmatch(ref)
		if v := os.Getenv(m[1]); v != "" {
			return v
		}
		if strings.Contains(ref, ":-") {
			return m[2]
		}
		*errs = append(*errs, fmt.Sprintf("line %d: %s is not set", line, m[1]))
		return ""
	})
	return strings.ReplaceAll(s, lit, "${")
}
