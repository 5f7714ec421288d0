package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/promcp/promcp-device/manifests"
)

// cmdConvert writes a PhysMCP manifest (and the physmcp.policy.yml beside
// it) in this gateway's format: NAME.yml and NAME.policy.yml in --out.
// The files written load into the same Manifest and Policy that serve
// builds from the PhysMCP files directly.
func cmdConvert(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("convert", flag.ContinueOnError)
	fs.SetOutput(stderr)
	out := fs.String("out", ".", "directory to write NAME.yml and NAME.policy.yml into")
	name := fs.String("name", "", "NAME of the files written (default: the PhysMCP device id)")
	policyFlag := fs.String("policy", "", "the PhysMCP policy (default: physmcp.policy.yml beside the manifest, if there is one)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: promcp-device convert [--out DIR] [--name NAME] [--policy FILE] physmcp.manifest.yml")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() != 1 {
		fs.Usage()
		return 2
	}
	path := fs.Arg(0)
	data, err := os.ReadFile(path)
	if err != nil {
		fmt.Fprintln(stderr, "promcp-device convert:", err)
		return 1
	}
	if !manifests.IsPhysMCP(data) {
		fmt.Fprintf(stderr, "promcp-device convert: %s is not a PhysMCP manifest (want physmcp_version, device and capabilities)\n", path)
		return 1
	}
	polPath := *policyFlag
	if polPath == "" {
		polPath = filepath.Join(filepath.Dir(path), manifests.PhysMCPPolicyName)
	}
	var pol []byte
	if pol, err = os.ReadFile(polPath); err != nil {
		if *policyFlag != "" || !errors.Is(err, os.ErrNotExist) {
			fmt.Fprintln(stderr, "promcp-device convert:", err)
			return 1
		}
		pol = nil
	}
	base := *name
	if base == "" {
		m, err := manifests.Parse(path, data)
		if err != nil {
			fmt.Fprintln(stderr, err)
			return 1
		}
		base = m.Gateway
	}
	policyName := base + ".policy.yml"
	man, polOut, err := manifests.ConvertPhysMCP(path, data, polPath, pol, policyName)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	header := "# Converted from the PhysMCP files " + path
	if pol != nil {
		header += " and " + polPath
	}
	header += " by promcp-device convert.\n"
	if !strings.Contains(string(man), "policy: "+manifests.PolicyNone) && polOut == nil {
		fmt.Fprintf(stderr, "promcp-device convert: warning: the manifest has do_* capabilities and there is no %s: serve will refuse every do_* until %s exists\n", polPath, policyName)
	}
	if err := os.MkdirAll(*out, 0o755); err != nil {
		fmt.Fprintln(stderr, "promcp-device convert:", err)
		return 1
	}
	written := []string{filepath.Join(*out, base+".yml")}
	if err := os.WriteFile(written[0], append([]byte(header), man...), 0o644); err != nil {
		fmt.Fprintln(stderr, "promcp-device convert:", err)
		return 1
	}
	if polOut != nil {
		written = append(written, filepath.Join(*out, policyName))
		if err := os.WriteFile(written[1], append([]byte(header), polOut...), 0o644); err != nil {
			fmt.Fprintln(stderr, "promcp-device convert:", err)
			return 1
		}
	}
	fmt.Fprintln(stdout, "wrote", strings.Join(written, " and "))
	return 0
}
