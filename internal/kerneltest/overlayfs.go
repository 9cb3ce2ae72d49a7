package kerneltest

import (
	"fmt"
	"os"
	"strings"
)

// OverlayFS needs the overlay file system (container roots).
var OverlayFS = Feature{Name: "overlayfs", Probe: func() error {
	data, err := os.ReadFile("/proc/filesystems")
	if err != nil {
		return err
	}
	for _, line := range strings.Split(string(data), "\n") {
		if strings.TrimSpace(strings.TrimPrefix(line, "nodev")) == "overlay" {
			return nil
		}
	}
	return fmt.Errorf("overlay is not in /proc/filesystems")
}}
