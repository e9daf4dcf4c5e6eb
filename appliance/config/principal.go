package config

// ssl.principal.mapping.rules: how a TLS client certificate's subject
// distinguished name becomes a principal name (KIP-371). The value is a
// list of rules, tried in order, separated by commas and blanks:
//
//   - DEFAULT: the distinguished name itself;
//   - RULE:pattern/replacement/ with an optional L or U after the last
//     slash: when the regular expression pattern matches the whole name,
//     the name with every match replaced by replacement ($1 ... name
//     groups), lower- or upper-cased for L and U.
//
// A backslash escapes the next character inside pattern and replacement
// (\/ is a slash that does not end the part; \$ a literal dollar in
// replacement, where '$' must name a group, as in Java). The first rule that applies
// gives the name; when none does, the connection is refused
// (ErrNoPrincipalRule). The default is DEFAULT. Patterns are Go regular
// expressions (RE2), which cover what Kafka's Java patterns use for this.

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
)

// ErrNoPrincipalRule is returned by PrincipalRules.Map when no rule
// applies to a distinguished name.
var ErrNoPrincipalRule = errors.New("no ssl.principal.mapping.rules rule applies")

// PrincipalRule is one parsed rule of ssl.principal.mapping.rules.
type PrincipalRule struct {
	Default     bool           // DEFAULT
	Pattern     *regexp.Regexp // anchored at both ends (Java's Matcher.matches)
	find        *regexp.Regexp // unanchored, for the replacement
	Replacement string         // in Go's Expand syntax (${1})
	Case        byte           // 0, 'L' or 'U'
}

// PrincipalRules is a parsed ssl.principal.mapping.rules value; the zero
// value acts as DEFAULT.
type PrincipalRules []PrincipalRule

// ParsePrincipalRules parses an ssl.principal.mapping.rules value.
func ParsePrincipalRules(s string) (PrincipalRules, error) {
	var out PrincipalRules
	i := 0
	for {
		for i < len(s) && (s[i] == ',' || s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r') {
			i++
		}
		if i >= len(s) {
			break
		}
		rest := s[i:]
		switch {
		case strings.HasPrefix(rest, "DEFAULT"):
			out = append(out, PrincipalRule{Default: true})
			i += len("DEFAULT")
		case strings.HasPrefix(rest, "RULE:"):
			i += len("RULE:")
			pat, n, ok := principalRulePart(s[i:], true)
			if !ok {
				return nil, fmt.Errorf("ssl.principal.mapping.rules: rule at offset %d: pattern not ended by '/'", i)
			}
			i += n
			repl, n, ok := principalRulePart(s[i:], false)
			if !ok {
				return nil, fmt.Errorf("ssl.principal.mapping.rules: rule at offset %d: replacement not ended by '/'", i)
			}
			i += n
			r := PrincipalRule{}
			if i < len(s) && (s[i] == 'L' || s[i] == 'U') {
				r.Case = s[i]
				i++
			}
			var err error
			if r.Pattern, err = regexp.Compile(`^(?:` + pat + `)$`); err != nil {
				return nil, fmt.Errorf("ssl.principal.mapping.rules: cannot compile pattern %q: %w", pat, err)
			}
			r.find = regexp.MustCompile(pat) // compiles: the anchored form did
			if r.Replacement, err = javaReplacement(repl, r.find.NumSubexp()); err != nil {
				return nil, fmt.Errorf("ssl.principal.mapping.rules: %w", err)
			}
			out = append(out, r)
		default:
			return nil, fmt.Errorf("ssl.principal.mapping.rules: expected DEFAULT or RULE: at offset %d, got %q", i, truncate(rest, 20))
		}
		if i < len(s) && !strings.ContainsRune(", \t\r\n", rune(s[i])) {
			return nil, fmt.Errorf("ssl.principal.mapping.rules: unexpected %q after a rule at offset %d", truncate(s[i:], 20), i)
		}
	}
	return out, nil
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n] + "..."
	}
	return s
}

// principalRulePart reads a pattern or a replacement up to an unescaped
// '/'; n counts the bytes read including the slash. A pattern's "\/"
// becomes "/" (other escapes stay for the regular expression); a
// replacement is returned as written (javaReplacement resolves it).
func principalRulePart(s string, regex bool) (part string, n int, ok bool) {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '\\' && i+1 < len(s):
			i++
			if regex && s[i] == '/' {
				b.WriteByte('/')
			} else {
				b.WriteByte('\\')
				b.WriteByte(s[i])
			}
		case c == '/':
			return b.String(), i + 1, true
		default:
			b.WriteByte(c)
		}
	}
	return "", 0, false
}

// javaReplacement turns a Java replacement string into Go's Expand syntax:
// a backslash takes the next character literally; $ and digits name a
// group, the digits taken while the number stays a group of the pattern
// (groups of them), as Java's Matcher does; any other '$' is literal.
func javaReplacement(s string, groups int) (string, error) {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '\\' && i+1 < len(s):
			i++
			if s[i] == '$' {
				b.WriteString("$$")
			} else {
				b.WriteByte(s[i])
			}
		case c == '$':
			if i+1 >= len(s) || s[i+1] < '0' || s[i+1] > '9' {
				return "", fmt.Errorf("replacement %q: '$' at offset %d is not followed by a group number (escape it as \\$)", s, i)
			}
			g := int(s[i+1] - '0')
			j := i + 2
			for j < len(s) && s[j] >= '0' && s[j] <= '9' && g*10+int(s[j]-'0') <= groups {
				g = g*10 + int(s[j]-'0')
				j++
			}
			if g > groups {
				return "", fmt.Errorf("replacement %q: no group %d in the pattern", s, g)
			}
			fmt.Fprintf(&b, "${%d}", g)
			i = j - 1
		default:
			b.WriteByte(c)
		}
	}
	return b.String(), nil
}

// Map turns a distinguished name into a principal name with the first rule
// that applies; the zero PrincipalRules returns dn.
func (rs PrincipalRules) Map(dn string) (string, error) {
	if len(rs) == 0 {
		return dn, nil
	}
	for _, r := range rs {
		if r.Default {
			return dn, nil
		}
		if !r.Pattern.MatchString(dn) {
			continue
		}
		out := r.find.ReplaceAllString(dn, r.Replacement)
		switch r.Case {
		case 'L':
			out = strings.ToLower(out)
		case 'U':
			out = strings.ToUpper(out)
		}
		return out, nil
	}
	return "", fmt.Errorf("%w to %q", ErrNoPrincipalRule, dn)
}
