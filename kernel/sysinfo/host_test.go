package sysinfo

import (
	"errors"
	"io/fs"
	"strings"
	"testing"
)

func TestHostFixtureDebian(t *testing.T) {
	h := Host{Root: "testdata/debian"}
	m, err := h.Meminfo()
	if err != nil {
		t.Fatal(err)
	}
	if m.MemTotal != 16318412*1024 {
		t.Errorf("MemTotal = %d, want %d", m.MemTotal, 16318412*1024)
	}
	checks := []struct {
		name string
		get  func() (string, error)
		want string
	}{
		{"OSImage", h.OSImage, "Debian GNU/Linux 12 (bookworm)"},
		{"MachineID", h.MachineID, "3d1219c7c4c5404aaa1f6d2a48adfda4"},
		{"BootID", h.BootID, "58cae9f1-b211-4404-8fe1-faa179b9e782"},
		{"SystemUUID", h.SystemUUID, "4C4C4544-0042-3510-8052-B3C04F4E3232"},
	}
	for _, c := range checks {
		got, err := c.get()
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if got != c.want {
			t.Errorf("%s = %q, want %q", c.name, got, c.want)
		}
	}
}

func TestHostOSImageFallsBackToUsrLib(t *testing.T) {
	got, err := Host{Root: "testdata/usrlib"}.OSImage()
	if err != nil {
		t.Fatal(err)
	}
	if want := `Plinth Test OS 1.0 "Quartz"`; got != want {
		t.Errorf("OSImage = %q, want %q", got, want)
	}
}

func TestHostOSImageWithoutPrettyName(t *testing.T) {
	got, err := Host{Root: "testdata/noosrelease"}.OSImage()
	if err != nil {
		t.Fatal(err)
	}
	if got != "Linux" {
		t.Errorf("OSImage = %q, want the os-release(5) default Linux", got)
	}
}

func TestHostMissingFiles(t *testing.T) {
	h := Host{Root: t.TempDir()}
	if _, err := h.OSImage(); err == nil || !strings.Contains(err.Error(), "no os-release file") {
		t.Errorf("OSImage error = %v, want one saying no os-release file", err)
	}
	if _, err := h.Meminfo(); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Meminfo error = %v, want ErrNotExist", err)
	}
	if _, err := h.SystemUUID(); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("SystemUUID error = %v, want ErrNotExist", err)
	}
}

func TestHostMachineIDValidated(t *testing.T) {
	_, err := Host{Root: "testdata/usrlib"}.MachineID()
	if err == nil || !strings.Contains(err.Error(), `"not-a-machine-id" is not a machine ID`) {
		t.Errorf("MachineID error = %v, want it to name the bad value", err)
	}
}
