// Package config owns plinthd's configuration: the Config type and its defaults, the
// command-line flags, loading a YAML file plus a drop-in directory merged the way
// kubelet documents for --config-dir, and validation that names the file, the field and
// the value of every mistake.
//
// Order of precedence, lowest first: Defaults(), the main file (--config), each
// *.yaml / *.yml file of the drop-in directory (--config-dir) in lexical order, then the
// flags the user actually set. Between files, scalars and nested structs override field
// by field, lists are replaced whole and maps are merged key by key. An explicit YAML
// null in a file means "forget what earlier files said here": the key is removed from
// the merged document (for a map entry, that entry is removed), so the built-in default
// applies unless a later file or a flag sets it again. This is RFC 7386 JSON merge patch
// applied file after file.
//
// Rules that compare two fields (a soft eviction threshold and its grace period) are
// checked on the merged configuration only, since one file may set one half and a
// drop-in the other. The eviction threshold rules themselves are daemon/pressure's, so
// the configuration accepts exactly what the pressure manager does.
//
// It reads the files it is pointed at and nothing else; it starts nothing and keeps no
// state between calls.
package config
