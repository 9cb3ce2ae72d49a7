package authapi

import (
	"fmt"
	"strings"
)

// Bootstrap token shape, as Kubernetes' bootstrap tokens: a public ID of 6 and a
// secret of 16 characters from [a-z0-9], joined by a dot.
const (
	TokenIDLength     = 6
	TokenSecretLength = 16
	TokenAlphabet     = "abcdefghijklmnopqrstuvwxyz0123456789"
)

// Token is a parsed bootstrap token.
type Token struct {
	ID     string
	Secret string
}

// String returns ID.SECRET.
func (t Token) String() string { return t.ID + "." + t.Secret }

// ParseToken reads ID.SECRET. The error names what is wrong without repeating the
// secret, which may end up in logs.
func ParseToken(s string) (Token, error) {
	id, secret, ok := strings.Cut(s, ".")
	if !ok {
		return Token{}, fmt.Errorf("bootstrap token: want ID.SECRET (%d and %d characters of [a-z0-9]), found no dot", TokenIDLength, TokenSecretLength)
	}
	if err := ValidateTokenID(id); err != nil {
		return Token{}, err
	}
	if len(secret) != TokenSecretLength || !inAlphabet(secret) {
		return Token{}, fmt.Errorf("bootstrap token %s: the secret after the dot must be %d characters of [a-z0-9]", id, TokenSecretLength)
	}
	return Token{ID: id, Secret: secret}, nil
}

// ValidateTokenID checks a token ID: 6 characters of [a-z0-9].
func ValidateTokenID(id string) error {
	if len(id) != TokenIDLength || !inAlphabet(id) {
		return fmt.Errorf("bootstrap token ID %q: want %d characters of [a-z0-9]", printable(id), TokenIDLength)
	}
	return nil
}

func inAlphabet(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

// printable shortens s for an error message and keeps control characters out of it.
func printable(s string) string {
	const max = 32
	if len(s) > max {
		s = s[:max] + "..."
	}
	return strings.ToValidUTF8(s, "?")
}

// BearerToken returns the token of an "Authorization: Bearer TOKEN" header value.
// ok is false when the header is empty or uses another scheme: such a request carries
// no bearer credentials. The scheme is case-insensitive (RFC 9110); spaces or tabs
// separate it from the token, which must be one non-empty word.
func BearerToken(header string) (token string, ok bool, err error) {
	header = strings.TrimSpace(header)
	if header == "" {
		return "", false, nil
	}
	scheme, rest := header, ""
	if i := strings.IndexAny(header, " \t"); i >= 0 {
		scheme, rest = header[:i], header[i:]
	}
	if !strings.EqualFold(scheme, "bearer") {
		return "", false, nil
	}
	token = strings.TrimLeft(rest, " \t")
	if token == "" {
		return "", true, fmt.Errorf("authorization header: the Bearer scheme carries no token")
	}
	if strings.ContainsAny(token, " \t") {
		return "", true, fmt.Errorf("authorization header: the Bearer token must be a single word")
	}
	return token, true, nil
}
