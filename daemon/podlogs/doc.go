// Package podlogs reads container logs written in the CRI log format, where each line
// of a file is one entry:
//
//	<RFC3339Nano time> <stdout|stderr> <P|F>[:more tags] <content>
//
// P marks a partial entry whose line continues in the next entry, F the entry that
// ends a line. Reader merges partial entries into whole lines, serves kubelet's log
// options (tail lines, since a time, timestamps, a byte limit) and follows a file as it
// grows and as it is rotated (renamed away and recreated, or truncated in place).
// Locator finds the files under the pod log root,
// <root>/<namespace>_<pod>_<uid>/<container>/<restartCount>.log.
//
// Lines are parsed by daemon/pods/crilog, the pod runtime's writer of the format, so
// reader and writer agree on it. It owns nothing but the files it opens for reading and
// closes them; it never writes. It has no kernel code.
package podlogs
