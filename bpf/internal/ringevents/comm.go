package ringevents

// Comm turns a kernel task comm (NUL-terminated, at most 16 bytes) into a string.
func Comm(c [16]int8) string {
	b := make([]byte, 0, len(c))
	for _, ch := range c {
		if ch == 0 {
			break
		}
		b = append(b, byte(ch))
	}
	return string(b)
}
