package authapi

import (
	"strings"
	"testing"
)

// FuzzAuthorizationHeader feeds arbitrary Authorization headers through the parsers a
// request's credentials meet first: BearerToken, then ParseToken.
func FuzzAuthorizationHeader(f *testing.F) {
	for _, s := range []string{
		"", "Bearer abcdef.0123456789abcdef", "bearer\tabcdef.0123456789abcdef", "Bearer ",
		"Basic Zm9vOmJhcg==", "Bearer abcdef.0123456789abcdef extra", "Bearer .", "Bearer \x00\xff.",
		"Bearer abcdef.0123456789abcdeF", "Bearer ABCDEF.0123456789abcdef",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, header string) {
		token, ok, err := BearerToken(header)
		if !ok {
			if token != "" || err != nil {
				t.Fatalf("BearerToken(%q) = %q, %v without a bearer scheme", header, token, err)
			}
			return
		}
		if err != nil {
			if token != "" {
				t.Fatalf("BearerToken(%q) returned token %q with error %v", header, token, err)
			}
			return
		}
		if token == "" || strings.ContainsAny(token, " \t") {
			t.Fatalf("BearerToken(%q) = %q: not one word", header, token)
		}
		tok, err := ParseToken(token)
		if err != nil {
			// The error may quote the public ID, never what follows the dot.
			id, secret, found := strings.Cut(token, ".")
			if found && len(secret) >= 4 && !strings.Contains(id, secret) && strings.Contains(err.Error(), secret) {
				t.Fatalf("ParseToken(%q) error repeats the secret: %v", token, err)
			}
			return
		}
		if tok.String() != token || len(tok.ID) != TokenIDLength || len(tok.Secret) != TokenSecretLength ||
			!inAlphabet(tok.ID) || !inAlphabet(tok.Secret) {
			t.Fatalf("ParseToken(%q) = %+v", token, tok)
		}
	})
}

// FuzzParseCACertHash checks that every accepted hash prints back the same way.
func FuzzParseCACertHash(f *testing.F) {
	for _, s := range []string{"", "sha256:", "sha256:" + strings.Repeat("ab", 32), "sha256:" + strings.Repeat("AB", 32), "md5:00", "sha256:" + strings.Repeat("g", 64)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		h, err := ParseCACertHash(s)
		if err != nil {
			return
		}
		if !strings.EqualFold(h.String(), s) {
			t.Fatalf("ParseCACertHash(%q) prints back as %q", s, h.String())
		}
	})
}
