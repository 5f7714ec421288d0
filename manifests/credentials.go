package manifests

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// FleetUser is a user name and password a fleet link authenticates with.
type FleetUser struct {
	User, Password string
}

// IsZero reports whether u names no user.
func (u FleetUser) IsZero() bool { return u.User == "" }

// ReadCredentials reads a username (first line) and a password (second
// line) from a file only its owner may read: a file others may read is
// refused, as ssh refuses such a key.
func ReadCredentials(path string) (string, []byte, error) {
	lines, err := readPrivateLines(path, 2)
	if err != nil {
		return "", nil, err
	}
	if len(lines) < 2 || lines[0] == "" {
		return "", nil, fmt.Errorf("%s: want the username on the first line and the password on the second", path)
	}
	return lines[0], []byte(lines[1]), nil
}

// ReadUsers reads the users a hub accepts, one "user:password" a line
// (blank lines and lines starting with # skipped), from a file only its
// owner may read.
func ReadUsers(path string) ([]FleetUser, error) {
	lines, err := readPrivateLines(path, 0)
	if err != nil {
		return nil, err
	}
	var out []FleetUser
	seen := map[string]bool{}
	for i, l := range lines {
		if strings.TrimSpace(l) == "" || strings.HasPrefix(strings.TrimSpace(l), "#") {
			continue
		}
		u, p, ok := strings.Cut(l, ":")
		if !ok || u == "" || p == "" {
			return nil, fmt.Errorf("%s:%d: want user:password", path, i+1)
		}
		if seen[u] {
			return nil, fmt.Errorf("%s:%d: user %q listed twice", path, i+1, u)
		}
		seen[u] = true
		out = append(out, FleetUser{User: u, Password: p})
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: lists no user (want one user:password a line)", path)
	}
	return out, nil
}

// readPrivateLines reads up to max lines (0: all) of a file that neither
// its group nor others may read.
func readPrivateLines(path string, max int) ([]string, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if fi.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("%s is readable by others (mode %04o): chmod 600 it", path, fi.Mode().Perm())
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	var lines []string
	for sc.Scan() && (max == 0 || len(lines) < max) {
		lines = append(lines, strings.TrimRight(sc.Text(), "\r"))
	}
	return lines, sc.Err()
}

// fleetCredentials decodes the fleet file's credentials, users and
// insecure keys: the files are read (relative to the fleet file) and
// checked now, so a missing, malformed or world-readable one is a
// positioned error before anything listens or dials.
func fleetCredentials(f *Fleet, o obj) {
	rel := func(p string) string {
		if p == "" || filepath.IsAbs(p) {
			return p
		}
		return filepath.Join(filepath.Dir(f.File), p)
	}
	f.Insecure = o.boolean("insecure")
	if p := o.str("credentials"); p != "" {
		f.CredentialsFile = rel(p)
		user, pass, err := ReadCredentials(f.CredentialsFile)
		if err != nil {
			o.add("credentials", ErrUnknownValue, ": %v", err)
		} else {
			f.Credentials = FleetUser{User: user, Password: string(pass)}
		}
	}
	if p := o.str("users"); p != "" {
		f.UsersFile = rel(p)
		users, err := ReadUsers(f.UsersFile)
		if err != nil {
			o.add("users", ErrUnknownValue, ": %v", err)
		}
		f.Users = users
	}
}

// checkFleetAuth holds the safe default: every fleet link authenticates
// unless the file says insecure: true.
func checkFleetAuth(f *Fleet, o obj) {
	if o.f == nil {
		return
	}
	switch {
	case f.Insecure && (o.has("credentials") || o.has("users")):
		o.add("insecure", ErrNotAllowed, "with credentials or users (an insecure fleet authenticates nothing)")
	case f.Insecure:
	case !o.has("credentials"):
		o.add("credentials", ErrMissing, "credentials (want a file holding the user and password this %s authenticates its fleet links with, mode 0600; or insecure: true on a trusted network only)", f.Role)
	}
	for _, u := range f.Users {
		if u.User == f.Credentials.User {
			o.add("users", ErrDuplicate, "user %q: it is already the hub's own (credentials)", u.User)
		}
	}
	if f.Role != RoleHub && o.has("users") {
		o.add("users", ErrNotAllowed, ": only a hub accepts users (a %s names its own credentials)", f.Role)
	}
}
