package bundle

import "strings"

// Expand replaces $(NAME) references in s as Kubernetes does for env values, command
// and args: a defined NAME becomes its value, an undefined one stays as written, "$$"
// becomes a literal "$" (so "$$(NAME)" yields "$(NAME)" unexpanded), and a "$" before
// anything else, or a "$(" without its ")", stays as it is.
func Expand(s string, lookup func(name string) (string, bool)) string {
	if !strings.Contains(s, "$") {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); {
		c := s[i]
		if c != '$' || i+1 >= len(s) {
			b.WriteByte(c)
			i++
			continue
		}
		switch s[i+1] {
		case '$':
			b.WriteByte('$')
			i += 2
		case '(':
			end := strings.IndexByte(s[i+2:], ')')
			if end < 0 {
				b.WriteString(s[i:])
				return b.String()
			}
			name := s[i+2 : i+2+end]
			if v, ok := lookup(name); ok && name != "" {
				b.WriteString(v)
			} else {
				b.WriteString(s[i : i+3+end])
			}
			i += 3 + end
		default:
			b.WriteByte('$')
			i++
		}
	}
	return b.String()
}
