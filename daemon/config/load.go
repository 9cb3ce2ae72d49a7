package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"

	jsonpatch "github.com/evanphx/json-patch/v5"
	yamlv2 "go.yaml.in/yaml/v2"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/yaml"
)

// Load reads file (skipped when empty; when missing, an error only if fileExplicit)
// and then the *.yaml and *.yml files of dropInDir in lexical order (a missing or empty
// dropInDir is skipped), merges them over Defaults() and validates the result. It
// returns the files it read, in the order they were applied.
func Load(file string, fileExplicit bool, dropInDir string) (Config, []string, error) {
	c, files, err := loadFiles(file, fileExplicit, dropInDir)
	if err != nil {
		return Config{}, files, err
	}
	if err := c.Validate(); err != nil {
		return Config{}, files, fmt.Errorf("configuration merged from %s: %w", describeSources(files), err)
	}
	return c, files, nil
}

// loadFiles is Load without the final validation, so flags can be applied first.
func loadFiles(file string, fileExplicit bool, dropInDir string) (Config, []string, error) {
	return loadMerged(configSchema, file, fileExplicit, dropInDir)
}

// schema is what loading needs to know about the configuration type: its defaults and
// its per-field validation. Loading is generic so the merge rules can be tested on
// shapes Config does not have yet (nested structs).
type schema[T any] struct {
	defaults func() T
	validate func(T) field.ErrorList
}

var configSchema = schema[Config]{defaults: Defaults, validate: Config.validate}

// loadMerged reads file and the drop-ins of dropInDir, checks each on its own and
// merges them over the defaults. The errors of all files are returned together.
func loadMerged[T any](s schema[T], file string, fileExplicit bool, dropInDir string) (T, []string, error) {
	var zero T
	paths, err := configPaths(file, dropInDir)
	if err != nil {
		return zero, nil, err
	}
	var read []string
	var docs [][]byte
	var errs []error
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) && p == file && !fileExplicit {
				continue // the default --config path may be absent: defaults apply
			}
			errs = append(errs, fmt.Errorf("reading configuration: %w", err))
			continue
		}
		read = append(read, p)
		doc, err := parseFile(s, p, data)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		docs = append(docs, doc)
	}
	if len(errs) > 0 {
		return zero, read, errors.Join(errs...)
	}
	c, err := mergeDocuments(s, docs)
	if err != nil {
		return zero, read, fmt.Errorf("configuration merged from %s: %w", describeSources(read), err)
	}
	return c, read, nil
}

// mergeDocuments applies the JSON documents from parseFile in order (RFC 7386 merge
// patch: objects merge key by key, everything else is replaced, null removes) and
// decodes the result over the defaults.
func mergeDocuments[T any](s schema[T], docs [][]byte) (T, error) {
	var zero T
	merged := []byte("{}")
	for _, doc := range docs {
		var err error
		if merged, err = jsonpatch.MergePatch(merged, doc); err != nil {
			return zero, err
		}
	}
	c := s.defaults()
	if err := decodeStrict(merged, &c); err != nil {
		// Every document passed checkSchema, so the walker and encoding/json
		// disagree: a bug in this package.
		return zero, err
	}
	return c, nil
}

// configPaths lists the files to read: the main file, then the drop-ins in lexical
// order. Directories and files with other suffixes in dropInDir are ignored.
func configPaths(file, dropInDir string) ([]string, error) {
	var paths []string
	if file != "" {
		paths = append(paths, file)
	}
	if dropInDir == "" {
		return paths, nil
	}
	entries, err := os.ReadDir(dropInDir) // sorted by file name
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return paths, nil
	case err != nil:
		return nil, fmt.Errorf("reading configuration drop-in directory: %w", err)
	}
	for _, e := range entries {
		name := e.Name()
		if !strings.HasSuffix(name, ".yaml") && !strings.HasSuffix(name, ".yml") {
			continue
		}
		p := filepath.Join(dropInDir, name)
		if st, err := os.Stat(p); err == nil && st.IsDir() { // Stat: follow symlinks
			continue
		}
		paths = append(paths, p)
	}
	return paths, nil
}

// parseFile turns one file's YAML into a JSON object, refusing what Load would refuse:
// YAML syntax errors, duplicate keys, more than one document, a top level that is not
// a mapping, unknown fields, values of the wrong type and invalid values. Every error
// names name (the file). The returned JSON keeps the file's nulls for the merge.
func parseFile[T any](s schema[T], name string, data []byte) ([]byte, error) {
	raw, err := yaml.YAMLToJSONStrict(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if err := checkYAMLShape(data); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	var v any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if v == nil { // empty file, comments only, or a bare null
		return []byte("{}"), nil
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("%s: the top level must be a mapping of field names to values, not %s", name, describeValue(v))
	}
	if errs := checkSchema(nil, obj, reflect.TypeFor[T]()); len(errs) > 0 {
		return nil, errors.Join(wrapEach(errs, name)...)
	}
	// Check the values this file sets, over the defaults for the rest; nulls are
	// dropped first because they set nothing.
	setOnly, err := jsonpatch.MergePatch([]byte("{}"), raw)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	c := s.defaults()
	if err := decodeStrict(setOnly, &c); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if errs := s.validate(c); len(errs) > 0 {
		return nil, errors.Join(wrapEach(errs, name)...)
	}
	return raw, nil
}

// checkYAMLShape refuses what the YAML to JSON conversion would silently change: content
// after the first document (only the first is read) and mapping keys that are not
// strings (YAML 1.1 reads an unquoted on, yes, y or 010 as a boolean or a number, and
// the conversion would turn a label key "on" into "true").
func checkYAMLShape(data []byte) error {
	dec := yamlv2.NewDecoder(bytes.NewReader(data))
	for n := 1; ; n++ {
		var v any
		err := dec.Decode(&v)
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		if n > 1 && v != nil {
			return fmt.Errorf("document %d: a configuration file holds one YAML document; merge it into the first or move it to its own drop-in file", n)
		}
		if err := checkYAMLKeys(nil, v); err != nil {
			return err
		}
	}
}

func checkYAMLKeys(path *field.Path, v any) error {
	switch v := v.(type) {
	case map[any]any:
		for k, e := range v {
			ks, ok := k.(string)
			if !ok {
				return fmt.Errorf("%s: a key is read by YAML as %s, not as a string; quote the key", pathOrTop(path), describeYAMLKey(k))
			}
			if err := checkYAMLKeys(path.Child(ks), e); err != nil {
				return err
			}
		}
	case []any:
		for i, e := range v {
			if err := checkYAMLKeys(path.Index(i), e); err != nil {
				return err
			}
		}
	}
	return nil
}

func describeYAMLKey(k any) string {
	switch k := k.(type) {
	case bool:
		return fmt.Sprintf("the boolean %v (YAML 1.1 reads unquoted y, yes, on, n, no and off as booleans)", k)
	case int, int64, uint64, float64:
		return fmt.Sprintf("the number %v", k)
	case nil:
		return "null"
	}
	return fmt.Sprintf("%T %v", k, k)
}

func pathOrTop(p *field.Path) string {
	if p == nil {
		return "top level"
	}
	return p.String()
}

// decodeStrict decodes a JSON object over *c. Maps in *c gain the document's keys and
// keep their own, so a default map is extended, not replaced.
func decodeStrict[T any](data []byte, c *T) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	return dec.Decode(c)
}

func describeSources(files []string) string {
	if len(files) == 0 {
		return "defaults"
	}
	return strings.Join(files, ", ")
}
