package auth

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"crypto/subtle"
	"fmt"
	"os"
	"strings"
)

// MinTokenLength is the shortest bearer token accepted in a tokens file.
const MinTokenLength = 16

// Tokens are bearer tokens by name. The zero value and nil accept nothing.
type Tokens struct {
	entries []tokenEntry
}

type tokenEntry struct {
	name string
	sum  [sha256.Size]byte
}

// LoadTokens reads a tokens file: one "name token" pair per line, blank
// lines and lines starting with '#' ignored. The file must not be readable
// or writable by others. Errors name the file and line.
func LoadTokens(path string) (*Tokens, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("tokens file: %w", err)
	}
	if perm := fi.Mode().Perm(); perm&0o007 != 0 {
		return nil, fmt.Errorf("tokens file %s: mode %04o lets others read or write it; chmod o-rwx", path, perm)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("tokens file: %w", err)
	}
	return ParseTokens(data, path)
}

// ParseTokens parses the content of a tokens file named source.
func ParseTokens(data []byte, source string) (*Tokens, error) {
	t := &Tokens{}
	names := map[string]int{}
	sums := map[[sha256.Size]byte]int{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		fields := strings.Fields(line)
		if len(fields) != 2 {
			return nil, fmt.Errorf("%s:%d: want \"name token\", got %d fields", source, n, len(fields))
		}
		name, tok := fields[0], fields[1]
		if err := CheckTokenName(name); err != nil {
			return nil, fmt.Errorf("%s:%d: %w", source, n, err)
		}
		if len(tok) < MinTokenLength {
			return nil, fmt.Errorf("%s:%d: the token of %q is shorter than %d characters", source, n, name, MinTokenLength)
		}
		if prev, dup := names[name]; dup {
			return nil, fmt.Errorf("%s:%d: token name %q is already used on line %d", source, n, name, prev)
		}
		sum := sha256.Sum256([]byte(tok))
		if prev, dup := sums[sum]; dup {
			return nil, fmt.Errorf("%s:%d: the token of %q is the same as the one on line %d", source, n, name, prev)
		}
		names[name], sums[sum] = n, n
		t.entries = append(t.entries, tokenEntry{name: name, sum: sum})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", source, err)
	}
	return t, nil
}

// CheckTokenName accepts token names: [A-Za-z0-9_.-]+.
func CheckTokenName(name string) error {
	if name == "" {
		return fmt.Errorf("token name is empty")
	}
	for _, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '.' || r == '-') {
			return fmt.Errorf("token name %q contains %q; allowed are [A-Za-z0-9_.-]", name, r)
		}
	}
	return nil
}

// Len returns the number of tokens.
func (t *Tokens) Len() int {
	if t == nil {
		return 0
	}
	return len(t.entries)
}

// Lookup returns the name of token. It compares the token's digest with
// every entry in constant time, and always with all of them, so neither the
// time nor the position of a match tells anything about the tokens.
func (t *Tokens) Lookup(token string) (name string, ok bool) {
	if t == nil {
		return "", false
	}
	sum := sha256.Sum256([]byte(token))
	found := -1
	for i := range t.entries {
		if subtle.ConstantTimeCompare(sum[:], t.entries[i].sum[:]) == 1 {
			found = i
		}
	}
	if found < 0 {
		return "", false
	}
	return t.entries[found].name, true
}
