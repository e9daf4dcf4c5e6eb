package config

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strings"
)

// ParseProperties reads a Java .properties file as Kafka's start scripts do:
// "key=value" or "key: value" lines, '#' and '!' comments, backslash line
// continuations. Later keys override earlier ones. An empty key is an
// error naming its line.
func ParseProperties(r io.Reader) (map[string]string, error) {
	props := map[string]string{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	var cont strings.Builder
	lineNo := 0
	for sc.Scan() {
		lineNo++
		line := strings.TrimLeft(sc.Text(), " \t\f")
		if cont.Len() == 0 && (line == "" || line[0] == '#' || line[0] == '!') {
			continue
		}
		if strings.HasSuffix(line, "\\") && !strings.HasSuffix(line, "\\\\") {
			cont.WriteString(strings.TrimSuffix(line, "\\"))
			continue
		}
		cont.WriteString(line)
		full := cont.String()
		cont.Reset()
		i := strings.IndexAny(full, "=:")
		if i < 0 {
			// A key alone means an empty value.
			props[strings.TrimSpace(full)] = ""
			continue
		}
		k := strings.TrimSpace(full[:i])
		v := strings.TrimSpace(full[i+1:])
		if k == "" {
			return nil, fmt.Errorf("cannot parse properties line %d: empty key", lineNo)
		}
		props[k] = v
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("cannot read properties: %w", err)
	}
	return props, nil
}

// ParseBool parses a boolean property as Kafka's ConfigDef does: "true"
// or "false", in any case, surrounding spaces ignored. Go's ParseBool also
// takes 1, 0, t and f, which a Kafka broker refuses.
func ParseBool(v string) (bool, error) {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "true":
		return true, nil
	case "false":
		return false, nil
	}
	return false, errors.New("want true or false")
}
