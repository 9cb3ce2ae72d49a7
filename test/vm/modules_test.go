package vm

import (
	"slices"
	"strings"
	"testing"
)

const sampleDep = `kernel/net/9p/9pnet_virtio.ko: kernel/net/9p/9pnet.ko kernel/fs/netfs/netfs.ko
kernel/fs/9p/9p.ko: kernel/net/9p/9pnet.ko kernel/fs/netfs/netfs.ko
kernel/net/9p/9pnet.ko: kernel/fs/netfs/netfs.ko
kernel/fs/netfs/netfs.ko:
kernel/drivers/virtio/virtio_pci.ko: kernel/drivers/virtio/virtio_pci_modern_dev.ko
kernel/drivers/virtio/virtio_pci_modern_dev.ko:
kernel/crypto/crc32c-generic.ko:
`

func TestLoadOrderPutsDependenciesFirstOnce(t *testing.T) {
	idx, err := parseModuleIndex(strings.NewReader(sampleDep), strings.NewReader("kernel/drivers/virtio/virtio.ko\n"))
	if err != nil {
		t.Fatal(err)
	}
	got, err := idx.loadOrder("virtio", "9pnet_virtio", "9p", "crc32c_generic")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"kernel/fs/netfs/netfs.ko", "kernel/net/9p/9pnet.ko", "kernel/net/9p/9pnet_virtio.ko",
		"kernel/fs/9p/9p.ko", "kernel/crypto/crc32c-generic.ko",
	}
	if !slices.Equal(got, want) {
		t.Fatalf("load order:\n got %v\nwant %v", got, want)
	}
}

func TestLoadOrderNamesAnUnknownModule(t *testing.T) {
	idx, err := parseModuleIndex(strings.NewReader(sampleDep), nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = idx.loadOrder("9p", "no_such_module")
	if err == nil || !strings.Contains(err.Error(), "no_such_module") {
		t.Fatalf("want an error naming no_such_module, got %v", err)
	}
}

func TestLoadOrderRejectsACycle(t *testing.T) {
	idx, err := parseModuleIndex(strings.NewReader("a.ko: b.ko\nb.ko: a.ko\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := idx.loadOrder("a"); err == nil || !strings.Contains(err.Error(), "cycle") {
		t.Fatalf("want a cycle error, got %v", err)
	}
}

func TestParseModuleIndexRejectsALineWithoutColon(t *testing.T) {
	if _, err := parseModuleIndex(strings.NewReader("kernel/a.ko\n"), nil); err == nil || !strings.Contains(err.Error(), "line 1") {
		t.Fatalf("want an error naming line 1, got %v", err)
	}
}
