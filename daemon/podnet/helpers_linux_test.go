package podnet

import (
	"os/exec"

	"github.com/google/nftables"
)

// execIn runs a command in the namespace at path.
func execIn(path string, args ...string) (string, error) {
	out, err := exec.Command("nsenter", append([]string{"--net=" + path, "--"}, args...)...).CombinedOutput()
	return string(out), err
}

// tableExists reports whether the inet table exists in the namespace at path.
func tableExists(path, name string) (bool, error) {
	c, done, err := nftConn(path)
	if err != nil {
		return false, err
	}
	defer done()
	tables, err := c.ListTablesOfFamily(nftables.TableFamilyINet)
	if err != nil {
		return false, err
	}
	for _, t := range tables {
		if t.Name == name {
			return true, nil
		}
	}
	return false, nil
}
