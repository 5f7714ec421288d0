package console

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"golang.org/x/crypto/bcrypt"

	"github.com/promcp/promcp-device/internal/asciiname"
	"github.com/promcp/promcp-device/internal/fileowner"
	"github.com/promcp/promcp-device/internal/filestamp"
	"github.com/promcp/promcp-device/server"
)

// ErrUsersFile is wrapped by every error in a console users file.
var ErrUsersFile = errors.New("bad console users file")

// Password hashing: bcrypt, at DefaultCost unless an account is added with
// another (MinCost and MaxCost bound it). Cost 12 took 0.22 s a check on
// one core of a shared 2-core amd64 machine (more on a Pi's slower cores;
// each step doubles it): slow against guessing from a stolen file, quick
// enough for a person signing in.
const (
	DefaultCost = 12
	MinCost     = bcrypt.MinCost
	MaxCost     = 16
)

// MinPassword and MaxPassword bound a password's length in bytes: bcrypt
// reads no further than 72, so a longer one is refused rather than
// silently cut.
const (
	MinPassword = 8
	MaxPassword = 72
)

// Users are the console's operator accounts: the people who sign in to the
// console with a name and a password, and whose role says whether they may
// approve. They are not MCP callers: an MCP bearer token never signs in,
// so an agent holding a token, whatever its role, cannot approve.
//
// The file format is one account a line, "NAME ROLE BCRYPT-HASH", with
// blank lines and lines starting with # ignored:
//
//	# promcp-device console users: name role bcrypt(password)
//	maria supervisor $2a$12$6Ad0P0nJ3L1f2ZTRhXl5Z.0v9F6fUUK7hVJ0C1o3y9XJ3fUeBz9Iq
//
// `promcp-device console-user add` writes it (mode 0600). A file that group
// or others may read or write is refused: the hashes are a target for
// offline guessing.
//
// Users loaded from a file follow the file: when it changes (an account
// removed, a password changed), the next check reads it again, and the
// console ends the sessions of an account that is gone or whose password
// changed. A file that no longer loads accepts nobody until it is mended.
//
// Users is safe for concurrent use.
type Users struct {
	path string // "" when parsed from a reader: never reloaded

	mu      sync.Mutex
	entries []userEntry
	stamp   filestamp.Stamp // SetUser renames a new file over it: a same-length password within one clock tick is seen too
	err     error           // the reloaded file's problem; nobody signs in while set
	known   []string        // the declared roles, once CheckRoles ran
	dummy   []byte          // a hash at the file's highest cost, checked for an unknown name
	dummyAt int             // the cost of dummy
}

type userEntry struct {
	name, role string
	hash       []byte
	line       int
}

// UserInfo is one account as console-user list shows it.
type UserInfo struct {
	Name, Role string
	Cost       int // the bcrypt cost of its hash
	Line       int
}

// userName is `^[A-Za-z0-9._@-]{1,64}$`, checked without a regular
// expression (its counted repetition compiles to about 60 KB at init).
func userName(s string) bool { return asciiname.Match(s, 1, 64, "._@-") }

// LoadUsers reads a console users file.
func LoadUsers(path string) (*Users, error) {
	data, fi, err := readPrivate(path)
	if err != nil {
		return nil, err
	}
	u, err := ParseUsers(path, bytes.NewReader(data))
	if err != nil {
		return nil, err
	}
	u.path, u.stamp = path, filestamp.Of(fi)
	return u, nil
}

// readPrivate reads the file at path, refusing it when group or others may
// read or write it.
func readPrivate(path string) ([]byte, os.FileInfo, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, fmt.Errorf("console users: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, nil, fmt.Errorf("console users: %w", err)
	}
	if perm := fi.Mode().Perm(); perm&0o077 != 0 {
		return nil, nil, fmt.Errorf("console users %s: %w: mode %04o lets group or others read or change the password hashes; run chmod 600 %s",
			path, ErrUsersFile, perm, path)
	}
	data, err := io.ReadAll(f)
	if err != nil {
		return nil, nil, fmt.Errorf("console users %s: %w", path, err)
	}
	return data, fi, nil
}

// ParseUsers reads the users file format from r; file names it in errors
// ("users.txt:3: ...").
func ParseUsers(file string, r io.Reader) (*Users, error) {
	u := &Users{}
	sc := bufio.NewScanner(r)
	var errs []error
	seen := map[string]int{}
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		bad := func(format string, a ...any) {
			errs = append(errs, fmt.Errorf("%s:%d: %w: "+format, append([]any{file, n, ErrUsersFile}, a...)...))
		}
		f := strings.Fields(line)
		if len(f) != 3 {
			bad("want NAME ROLE BCRYPT-HASH, got %d fields", len(f))
			continue
		}
		if !userName(f[0]) {
			bad("name %q (want letters, digits, . _ @ -)", f[0])
		}
		if !userName(f[1]) {
			bad("role %q (want a word such as viewer, operator, supervisor or admin)", f[1])
		}
		if _, err := bcrypt.Cost([]byte(f[2])); err != nil {
			bad("the password of %s is not a bcrypt hash (%v); set it with promcp-device console-user add", f[0], err)
			continue
		}
		if prev, dup := seen[f[0]]; dup {
			bad("%s is already on line %d", f[0], prev)
			continue
		}
		seen[f[0]] = n
		u.entries = append(u.entries, userEntry{name: f[0], role: f[1], hash: []byte(f[2]), line: n})
	}
	if err := sc.Err(); err != nil {
		errs = append(errs, fmt.Errorf("%s: %w", file, err))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return u, nil
}

// reload reads the file again when it changed. It is called with u.mu held.
func (u *Users) reload() {
	if u.path == "" {
		return
	}
	again, err := filestamp.Changed(u.path, u.stamp, u.err != nil)
	if err != nil {
		u.err, u.entries = fmt.Errorf("console users: %w", err), nil
		return
	}
	if !again {
		return
	}
	n, err := LoadUsers(u.path)
	if err != nil {
		u.err, u.entries = err, nil
		return
	}
	u.entries, u.stamp, u.err = n.entries, n.stamp, nil
}

// Err returns why a reloaded users file lets nobody sign in, or nil.
func (u *Users) Err() error {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.reload()
	return u.err
}

// Len returns the number of accounts (after a reload of a changed file).
func (u *Users) Len() int {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.reload()
	return len(u.entries)
}

// List returns the accounts, in file order (after a reload of a changed
// file).
func (u *Users) List() []UserInfo {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.reload()
	out := make([]UserInfo, 0, len(u.entries))
	for _, e := range u.entries {
		cost, _ := bcrypt.Cost(e.hash)
		out = append(out, UserInfo{Name: e.name, Role: e.role, Cost: cost, Line: e.line})
	}
	return out
}

// CheckRoles returns an error naming each account whose role is not in
// known. From then on an account of another role does not sign in (nor
// keeps its session), so a line added while the gateway runs cannot bring
// in an undeclared role either.
func (u *Users) CheckRoles(known []string) error {
	u.mu.Lock()
	u.known = slices.Clone(known)
	u.mu.Unlock()
	var errs []error
	for _, e := range u.List() {
		if !slices.Contains(known, e.Role) {
			errs = append(errs, fmt.Errorf("%s:%d: %w: %s has role %q, which is not declared (want %s)",
				u.path, e.Line, ErrUsersFile, e.Name, e.Role, strings.Join(known, ", ")))
		}
	}
	return errors.Join(errs...)
}

// find returns the account name (after a reload of a changed file), its
// hash, and the hash the check should compare with: the account's, or for
// an unknown name (or an undeclared role) a dummy at the file's highest
// cost, so that both take the same time.
func (u *Users) find(name string) (e userEntry, ok bool, compare []byte) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.reload()
	top := MinCost
	for _, x := range u.entries {
		if c, _ := bcrypt.Cost(x.hash); c > top {
			top = c
		}
		if subtle.ConstantTimeCompare([]byte(x.name), []byte(name)) == 1 && (u.known == nil || slices.Contains(u.known, x.role)) {
			e, ok = x, true
		}
	}
	if ok {
		return e, true, e.hash
	}
	if u.dummy == nil || u.dummyAt != top {
		u.dummy, _ = bcrypt.GenerateFromPassword([]byte("no such account"), top)
		u.dummyAt = top
	}
	return userEntry{}, false, u.dummy
}

// Check returns the account name signs in as when password is its
// password. It takes as long for an unknown name as for a wrong password
// (one bcrypt comparison either way), and answers both the same: false.
func (u *Users) Check(name, password string) (server.Caller, bool) {
	c, _, ok := u.check(name, password)
	return c, ok
}

// check is Check, returning also the fingerprint of the hash that matched
// (see account).
func (u *Users) check(name, password string) (server.Caller, [sha256.Size]byte, bool) {
	e, ok, hash := u.find(name)
	err := bcrypt.CompareHashAndPassword(hash, []byte(password))
	if !ok || err != nil {
		return server.Caller{}, [sha256.Size]byte{}, false
	}
	return server.Caller{Name: e.name, Role: e.role}, sha256.Sum256(e.hash), true
}

// account returns the account name as it is now, and a fingerprint of its
// password hash: a session ends when the account is gone, or its password
// changed, since the session opened.
func (u *Users) account(name string) (server.Caller, [sha256.Size]byte, bool) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.reload()
	for _, e := range u.entries {
		if e.name == name && (u.known == nil || slices.Contains(u.known, e.role)) {
			return server.Caller{Name: e.name, Role: e.role}, sha256.Sum256(e.hash), true
		}
	}
	return server.Caller{}, [sha256.Size]byte{}, false
}

// HashPassword returns the bcrypt hash of password at cost, as the users
// file holds it. A password shorter than MinPassword or longer than
// MaxPassword bytes, or a cost outside MinCost..MaxCost, is an error.
func HashPassword(password string, cost int) (string, error) {
	switch {
	case len(password) < MinPassword:
		return "", fmt.Errorf("the password is %d bytes; want at least %d", len(password), MinPassword)
	case len(password) > MaxPassword:
		return "", fmt.Errorf("the password is %d bytes; bcrypt reads at most %d", len(password), MaxPassword)
	case cost < MinCost || cost > MaxCost:
		return "", fmt.Errorf("cost %d: want %d to %d (default %d)", cost, MinCost, MaxCost, DefaultCost)
	}
	h, err := bcrypt.GenerateFromPassword([]byte(password), cost)
	if err != nil {
		return "", fmt.Errorf("hashing the password: %w", err)
	}
	return string(h), nil
}

// UserLine returns the users file line of an account.
func UserLine(name, role, hash string) string { return name + " " + role + " " + hash }

// SetUser adds the account name with role and password hash to the users
// file at path, or replaces the line of an account of that name, and
// reports whether it added one. The file is created when missing and
// replaced atomically otherwise (a temporary file renamed over it), mode
// 0600, owner kept, comments kept; a gateway serving it reads it again at
// the next sign-in or page.
func SetUser(path, name, role, hash string) (added bool, err error) {
	line := UserLine(name, role, hash)
	if _, err := ParseUsers("line", strings.NewReader(line)); err != nil {
		return false, err
	}
	var lines []string
	added = true
	data, fi, err := readPrivate(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		lines = []string{"# promcp-device console users: name role bcrypt(password); see promcp-device console-user\n"}
	case err != nil:
		return false, err
	default:
		if _, err := ParseUsers(path, bytes.NewReader(data)); err != nil {
			return false, err // never rewrite a file serve would refuse
		}
		for _, l := range strings.SplitAfter(string(data), "\n") {
			if f := strings.Fields(l); len(f) == 3 && f[0] == name {
				l, added = line+"\n", false
			}
			if l != "" {
				lines = append(lines, l)
			}
		}
		if n := len(lines); n > 0 && !strings.HasSuffix(lines[n-1], "\n") {
			lines[n-1] += "\n"
		}
	}
	if added {
		lines = append(lines, line+"\n")
	}
	return added, writeFile(path, strings.Join(lines, ""), fi)
}

// RemoveUser removes the account name from the users file at path, and
// reports whether there was one; the file is rewritten as SetUser does. A
// running gateway ends the account's console sessions at their next page.
func RemoveUser(path, name string) (bool, error) {
	data, fi, err := readPrivate(path)
	if err != nil {
		return false, err
	}
	if _, err := ParseUsers(path, bytes.NewReader(data)); err != nil {
		return false, err
	}
	var out []string
	found := false
	for _, l := range strings.SplitAfter(string(data), "\n") {
		if f := strings.Fields(l); len(f) == 3 && f[0] == name {
			found = true
			continue
		}
		out = append(out, l)
	}
	if !found {
		return false, nil
	}
	return true, writeFile(path, strings.Join(out, ""), fi)
}

// writeFile replaces the file at path with content, atomically, mode 0600,
// with the owner of the file fi describes (nil: a new file).
func writeFile(path, content string, fi os.FileInfo) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".console-users-*")
	if err != nil {
		return fmt.Errorf("console users: %w", err)
	}
	defer os.Remove(tmp.Name())
	_, werr := tmp.WriteString(content)
	if werr == nil {
		werr = tmp.Chmod(0o600)
	}
	if werr == nil && fi != nil {
		werr = fileowner.Keep(tmp, fi, "the users file")
	}
	if werr == nil {
		werr = tmp.Sync()
	}
	if cerr := tmp.Close(); werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = os.Rename(tmp.Name(), path)
	}
	if werr != nil {
		return fmt.Errorf("console users %s: %w", path, werr)
	}
	return nil
}
