//go:build !linux

package staticpods

import "errors"

// watchDir has no implementation off Linux: the periodic re-read alone finds changes.
func watchDir(string) (dirWatcher, error) {
	return nil, errors.New("file change notifications are only implemented on Linux")
}
