package imagectl

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"github.com/plinth/plinth/daemon/images/imagetest"
)

func TestImportThenList(t *testing.T) {
	root := filepath.Join(t.TempDir(), "images")
	archive := filepath.Join(t.TempDir(), "app.tar")
	tag, _ := name.NewTag("example.com/app:v3")
	if err := tarball.WriteToFile(archive, tag, imagetest.Busybox(t, "/bin/true")); err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	if code := Command(context.Background(), []string{"import", "--root", root, archive}, &out, &errOut); code != 0 {
		t.Fatalf("import exit %d: %s", code, errOut.String())
	}
	if !strings.Contains(out.String(), "imported sha256:") || !strings.Contains(out.String(), "example.com/app:v3") {
		t.Fatalf("import printed %q", out.String())
	}
	out.Reset()
	if code := Command(context.Background(), []string{"list", "--root", root}, &out, &errOut); code != 0 {
		t.Fatalf("list exit %d: %s", code, errOut.String())
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 2 || !strings.Contains(lines[1], "example.com/app:v3") || !strings.Contains(lines[1], "MiB") {
		t.Fatalf("list printed:\n%s", out.String())
	}
	errOut.Reset()
	if code := Command(context.Background(), []string{"import", "--root", root, filepath.Join(t.TempDir(), "missing.tar")}, &out, &errOut); code != 1 || !strings.Contains(errOut.String(), "missing.tar") {
		t.Fatalf("import of a missing file: exit %d, %q", code, errOut.String())
	}
}
