package supervisor

import (
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Plugin is one pre-launched plugin found by Discover.
type Plugin struct {
	// Index is the two-digit index part of the file name, for example "10".
	Index string
	// Name is the name part of the file name, for example "foo" for "10-foo".
	Name string
	// Path is the plugin executable: the plugin directory joined with the
	// file name.
	Path string
	// Config is the content of the plugin's drop-in configuration file, or
	// nil when it has none. A present but empty file gives a non-nil empty
	// slice.
	Config []byte
}

// FullName returns the plugin's full name, "<index>-<name>", which is also
// its file name.
func (p Plugin) FullName() string { return p.Index + "-" + p.Name }

// DiscoveryError reports a file in the plugin directory (or its drop-in
// configuration) that Discover skipped.
type DiscoveryError struct {
	// Path is the plugin file that was skipped.
	Path string
	// Err says which rule the file broke, or which read failed.
	Err error
}

// Error implements error.
func (e *DiscoveryError) Error() string {
	return fmt.Sprintf("skipping plugin file %s: %v", e.Path, e.Err)
}

// Unwrap returns the underlying error.
func (e *DiscoveryError) Unwrap() error { return e.Err }

// ParseName splits a plugin file name of the form "NN-name" into its index
// and name. The index must be exactly two ASCII digits, and the name must be
// non-empty and consist of the characters [a-zA-Z0-9_.+-] only.
//
// Classic NRI validates only the index of a launched plugin's file name; this
// function also applies the name rule classic NRI uses for external plugins,
// so every plugin, however it arrives, has a name of the same shape.
func ParseName(file string) (index, name string, err error) {
	index, name, ok := strings.Cut(file, "-")
	if !ok {
		return "", "", fmt.Errorf("invalid plugin file name %q: not of the form NN-name", file)
	}
	if err := CheckIndex(index); err != nil {
		return "", "", err
	}
	if err := CheckName(name); err != nil {
		return "", "", err
	}
	return index, name, nil
}

// CheckIndex reports whether index is a valid plugin index: exactly two
// ASCII digits.
func CheckIndex(index string) error {
	if len(index) != 2 {
		return fmt.Errorf("invalid plugin index %q: must be exactly 2 ASCII digits", index)
	}
	for i := range len(index) {
		if index[i] < '0' || index[i] > '9' {
			return fmt.Errorf("invalid plugin index %q: must be exactly 2 ASCII digits ([0-9][0-9])", index)
		}
	}
	return nil
}

// CheckName reports whether name is a valid plugin name: non-empty, with
// characters from [a-zA-Z0-9_.+-] only.
func CheckName(name string) error {
	if name == "" {
		return errors.New("invalid plugin name: name is empty")
	}
	for _, r := range name {
		switch {
		case 'a' <= r && r <= 'z', 'A' <= r && r <= 'Z', '0' <= r && r <= '9':
		case r == '_', r == '.', r == '+', r == '-':
		default:
			return fmt.Errorf("invalid plugin name %q: contains invalid character %q (allowed: [a-zA-Z0-9_.+-])", name, r)
		}
	}
	return nil
}

// Discover lists the pre-launched plugins in dir: every executable regular
// file (symbolic links are followed) whose name parses with ParseName. The
// plugins come sorted by index, then by name.
//
// Each plugin's configuration is read from confDir, first from
// "<index>-<name>.conf", then from "<name>.conf"; without either file Config
// is nil. An empty confDir means there is no configuration directory.
//
// Directories and files without any executable bit are skipped silently, as
// are files that disappear while Discover runs. An executable whose name does
// not parse, a plugin-like entry that cannot be examined (a dangling symbolic
// link, for example), and a plugin whose configuration cannot be read (for
// any reason other than its absence) are skipped and reported, each as a
// *DiscoveryError. Classic NRI fails as a whole on such a file; Discover lets
// the other plugins start.
//
// A missing dir yields no plugins and no error. Any other failure to read dir
// is returned as the only error.
func Discover(dir, confDir string) ([]Plugin, []error) {
	return discover(dir, confDir, false)
}

// Survey is Discover for a configuration check (nrid --check): it finds the
// same plugins, and reports every entry of dir that will not be launched,
// each as a *DiscoveryError saying why, including those Discover skips
// silently (directories, files that are not regular, files without an
// executable bit). A missing dir is reported as a *DiscoveryError for dir
// itself.
func Survey(dir, confDir string) ([]Plugin, []error) {
	return discover(dir, confDir, true)
}

// discover is Discover, and with all Survey.
func discover(dir, confDir string, all bool) ([]Plugin, []error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			if all {
				return nil, []error{&DiscoveryError{Path: dir, Err: errors.New("the plugin directory does not exist: nothing to launch")}}
			}
			return nil, nil
		}
		return nil, []error{fmt.Errorf("discover plugins in %s: %w", dir, err)}
	}

	var (
		plugins []Plugin
		errs    []error
	)
	for _, e := range entries {
		p, err := examine(dir, confDir, e, all)
		switch {
		case err != nil:
			errs = append(errs, err)
		case p != nil:
			plugins = append(plugins, *p)
		}
	}

	slices.SortFunc(plugins, func(a, b Plugin) int {
		return cmp.Or(cmp.Compare(a.Index, b.Index), cmp.Compare(a.Name, b.Name))
	})
	return plugins, errs
}

// examine looks at one entry of the plugin directory: the plugin it is, or
// the *DiscoveryError that skips it, or neither for an entry skipped
// silently (all reports those too).
func examine(dir, confDir string, e fs.DirEntry, all bool) (*Plugin, error) {
	file := e.Name()
	path := filepath.Join(dir, file)
	skip := func(err error) (*Plugin, error) { return nil, &DiscoveryError{Path: path, Err: err} }

	fi, err := os.Stat(path) // follow symbolic links
	if err != nil {
		// Report only what claims to be a plugin; a file removed since
		// ReadDir is simply gone.
		dangling := e.Type()&fs.ModeSymlink != 0
		if _, _, perr := ParseName(file); all || perr == nil && (dangling || !errors.Is(err, fs.ErrNotExist)) {
			return skip(err)
		}
		return nil, nil
	}
	switch {
	case fi.IsDir():
		if all {
			return skip(errors.New("a directory, not a plugin executable"))
		}
		return nil, nil
	case !fi.Mode().IsRegular():
		if all {
			return skip(fmt.Errorf("not a regular file (%s)", fi.Mode().Type()))
		}
		return nil, nil
	case fi.Mode().Perm()&0o111 == 0:
		if all {
			return skip(fmt.Errorf("not executable (mode %#o)", fi.Mode().Perm()))
		}
		return nil, nil
	}

	index, name, err := ParseName(file)
	if err != nil {
		return skip(err)
	}
	cfg, err := readConfig(confDir, index, name)
	if err != nil {
		return skip(err)
	}
	return &Plugin{Index: index, Name: name, Path: path, Config: cfg}, nil
}

// readConfig reads a plugin's drop-in configuration: "<index>-<name>.conf",
// then "<name>.conf". It returns nil, nil when neither exists.
func readConfig(confDir, index, name string) ([]byte, error) {
	if confDir == "" {
		return nil, nil
	}
	for _, file := range []string{index + "-" + name + ".conf", name + ".conf"} {
		path := filepath.Join(confDir, file)
		b, err := os.ReadFile(path)
		if err == nil {
			if b == nil {
				b = []byte{}
			}
			return b, nil
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("read plugin configuration %s: %w", path, err)
		}
	}
	return nil, nil
}
