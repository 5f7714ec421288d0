package trust

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/nats-io/nkeys"
)

// The files of a fleet directory (see Init).
const (
	CACertFile     = "ca.crt"
	CAKeyFile      = "ca.key"
	IdentitiesFile = "identities"
)

// NodeFiles are the files a node's fleet file names, in dir/<node>/.
type NodeFiles struct {
	Node string
	Role Role
	Dir  string
	// Seed is the nkey seed (identity:), CA the fleet CA (ca:); a hub's
	// Cert and Key are its TLS certificate (cert:, key:).
	Seed, CA, Cert, Key string
}

// InitOptions say what Init creates.
type InitOptions struct {
	Hubs     []string // hub member names (at least one)
	Hosts    []string // extra DNS names and IPs of the hubs' certificates
	Gateways []string // gateways to issue credentials for now
	Now      time.Time
}

// DefaultHosts are the hub certificates' names when none are given.
var DefaultHosts = []string{"localhost", "127.0.0.1", "::1"}

// Init creates a fleet directory dir (mode 0700; an existing non-empty
// one is refused): the fleet CA (ca.crt, and ca.key, 0600, which only
// init and add-gateway need: keep it off the nodes), the identities file,
// and per node a directory dir/<node> holding its nkey seed (0600) and a
// copy of ca.crt, a hub's certificate and key (0600) besides.
func Init(dir string, o InitOptions) ([]NodeFiles, error) {
	if len(o.Hubs) == 0 {
		return nil, errors.New("at least one hub member name")
	}
	if o.Now.IsZero() {
		o.Now = time.Now()
	}
	if len(o.Hosts) == 0 {
		o.Hosts = DefaultHosts
	}
	all := append(slices.Clone(o.Hubs), o.Gateways...)
	for i, n := range all {
		if err := ValidNode(n); err != nil {
			return nil, err
		}
		if slices.Contains(all[:i], n) {
			return nil, fmt.Errorf("node %s named twice", n)
		}
	}
	if err := mkdirNew(dir); err != nil {
		return nil, err
	}
	c, caKey, err := newCA("promcp fleet CA", o.Now)
	if err != nil {
		return nil, err
	}
	if err := writeNew(filepath.Join(dir, CACertFile), c.pem, 0o644); err != nil {
		return nil, err
	}
	if err := writeNew(filepath.Join(dir, CAKeyFile), caKey, 0o600); err != nil {
		return nil, err
	}
	var ids []Identity
	var out []NodeFiles
	for _, n := range all {
		role := RoleGateway
		if slices.Contains(o.Hubs, n) {
			role = RoleHub
		}
		nf, id, err := issue(dir, c, n, role, o.Hosts, o.Now)
		if err != nil {
			return nil, err
		}
		ids, out = append(ids, id), append(out, nf)
	}
	return out, writeNew(filepath.Join(dir, IdentitiesFile), formatIdentities(ids), 0o644)
}

// issue writes node n's directory: its seed, the CA and, for a hub, its
// certificate.
func issue(dir string, c *ca, n string, role Role, hosts []string, now time.Time) (NodeFiles, Identity, error) {
	nf := NodeFiles{Node: n, Role: role, Dir: filepath.Join(dir, n)}
	if err := mkdirNew(nf.Dir); err != nil {
		return nf, Identity{}, err
	}
	kp, err := nkeys.CreateUser()
	if err != nil {
		return nf, Identity{}, err
	}
	seed, _ := kp.Seed()
	pub, _ := kp.PublicKey()
	nf.Seed, nf.CA = filepath.Join(nf.Dir, n+".nk"), filepath.Join(nf.Dir, CACertFile)
	if err := writeNew(nf.Seed, append(seed, '\n'), 0o600); err != nil {
		return nf, Identity{}, err
	}
	if err := writeNew(nf.CA, c.pem, 0o644); err != nil {
		return nf, Identity{}, err
	}
	if role == RoleHub {
		cert, key, err := c.hubCert(n, hosts, now)
		if err != nil {
			return nf, Identity{}, err
		}
		nf.Cert, nf.Key = filepath.Join(nf.Dir, n+".crt"), filepath.Join(nf.Dir, n+".key")
		if err := writeNew(nf.Cert, cert, 0o644); err != nil {
			return nf, Identity{}, err
		}
		if err := writeNew(nf.Key, key, 0o600); err != nil {
			return nf, Identity{}, err
		}
	}
	return nf, Identity{Node: n, Role: role, Key: pub}, nil
}

// AddGateway issues gateway id's credentials in dir/<id> (its nkey seed
// and the CA certificate) and adds its public key to the identities file,
// which the hubs reload.
func AddGateway(dir, id string) (NodeFiles, error) {
	if err := ValidNode(id); err != nil {
		return NodeFiles{}, err
	}
	path := filepath.Join(dir, IdentitiesFile)
	ids, err := ReadIdentities(path)
	if err != nil {
		return NodeFiles{}, err
	}
	for _, x := range ids {
		if x.Node == id && !x.Revoked {
			return NodeFiles{}, fmt.Errorf("%s: node %s is in the fleet already (revoke it first to issue new credentials)", path, id)
		}
	}
	c, err := loadCA(filepath.Join(dir, CACertFile), filepath.Join(dir, CAKeyFile))
	if err != nil {
		return NodeFiles{}, err
	}
	nf, x, err := issue(dir, c, id, RoleGateway, nil, time.Now())
	if err != nil {
		return nf, err
	}
	return nf, replace(path, formatIdentities(append(ids, x)))
}

// Revoke marks node id's identity revoked in dir's identities file: the
// hubs reload the file, cut the node's live connections and refuse its
// next ones; no other node's credentials change.
func Revoke(dir, id string) (Identity, error) {
	path := filepath.Join(dir, IdentitiesFile)
	ids, err := ReadIdentities(path)
	if err != nil {
		return Identity{}, err
	}
	for i, x := range ids {
		if x.Node == id && !x.Revoked {
			if x.Role == RoleHub && live(ids, RoleHub) == 1 {
				return x, fmt.Errorf("%s is the fleet's last hub member", id)
			}
			ids[i].Revoked = true
			return ids[i], replace(path, formatIdentities(ids))
		}
	}
	return Identity{}, fmt.Errorf("%s: no live identity of node %s", path, id)
}

func live(ids []Identity, r Role) int {
	n := 0
	for _, x := range ids {
		if x.Role == r && !x.Revoked {
			n++
		}
	}
	return n
}

// mkdirNew creates dir with mode 0700; an existing empty directory is
// taken (its mode narrowed), anything else refused.
func mkdirNew(dir string) error {
	err := os.Mkdir(dir, 0o700)
	if errors.Is(err, fs.ErrExist) {
		ents, rerr := os.ReadDir(dir)
		if rerr != nil || len(ents) > 0 {
			return fmt.Errorf("%s: %w", dir, ErrExists)
		}
		return os.Chmod(dir, 0o700)
	}
	return err
}

// writeNew writes a file that must not exist yet, with mode perm.
func writeNew(path string, data []byte, perm os.FileMode) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("%s: %w", path, ErrExists)
	}
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// replace rewrites path atomically (a hub reloading it sees the old or the
// new file, never half of one).
func replace(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".identities-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(0o644); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
