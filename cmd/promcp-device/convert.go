package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/promcp/promcp-device/manifests"
)

// cmdConvert writes a PhysMCP manifest (and the physmcp.policy.yml beside
// it) in this gateway's format: NAME.yml and NAME.policy.yml in --out.
// The files written load into the same Manifest and Policy that serve
// builds from the PhysMCP files directly.
func cmdConvert(c *cli) int {
	out := c.String("out", ".", "directory to write NAME.yml and NAME.policy.yml into")
	name := c.String("name", "", "NAME of the files written (default: the PhysMCP device id)")
	policyFlag := c.String("policy", "", "the PhysMCP policy (default: physmcp.policy.yml beside the manifest, if there is one)")
	c.Usage = func() {
		fmt.Fprintln(c.stderr, "usage: promcp-device convert [--out DIR] [--name NAME] [--policy FILE] physmcp.manifest.yml")
		c.PrintDefaults()
	}
	if !c.parse() {
		return 2
	}
	if c.NArg() != 1 {
		c.Usage()
		return 2
	}
	path := c.Arg(0)
	data, err := os.ReadFile(path)
	if err != nil {
		return c.fail(err)
	}
	if !manifests.IsPhysMCP(data) {
		return c.fail(fmt.Errorf("%s is not a PhysMCP manifest (want physmcp_version, device and capabilities)", path))
	}
	polPath, pol, err := physMCPPolicy(path, *policyFlag)
	if err != nil {
		return c.fail(err)
	}
	base := *name
	if base == "" {
		m, err := manifests.Parse(path, data)
		if err != nil {
			fmt.Fprintln(c.stderr, err)
			return 1
		}
		base = m.Gateway
	}
	policyName := base + ".policy.yml"
	man, polOut, err := manifests.ConvertPhysMCP(path, data, polPath, pol, policyName)
	if err != nil {
		fmt.Fprintln(c.stderr, err)
		return 1
	}
	header := "# Converted from the PhysMCP files " + path
	if pol != nil {
		header += " and " + polPath
	}
	header += " by promcp-device convert.\n"
	if !strings.Contains(string(man), "policy: "+manifests.PolicyNone) && polOut == nil {
		fmt.Fprintf(c.stderr, "promcp-device convert: warning: the manifest has do_* capabilities and there is no %s: serve will refuse every do_* until %s exists\n", polPath, policyName)
	}
	files := []convertedFile{{filepath.Join(*out, base+".yml"), man}}
	if polOut != nil {
		files = append(files, convertedFile{filepath.Join(*out, policyName), polOut})
	}
	written, err := writeConverted(*out, header, files)
	if err != nil {
		return c.fail(err)
	}
	fmt.Fprintln(c.stdout, "wrote", strings.Join(written, " and "))
	return 0
}

// physMCPPolicy reads the PhysMCP policy of the manifest at path: the one
// named by --policy (which must exist), else physmcp.policy.yml beside the
// manifest if there is one (nil bytes when there is none).
func physMCPPolicy(path, named string) (string, []byte, error) {
	polPath := named
	if polPath == "" {
		polPath = filepath.Join(filepath.Dir(path), manifests.PhysMCPPolicyName)
	}
	pol, err := os.ReadFile(polPath)
	switch {
	case err == nil:
		return polPath, pol, nil
	case named == "" && errors.Is(err, os.ErrNotExist):
		return polPath, nil, nil
	}
	return polPath, nil, err
}

// convertedFile is one file convert writes.
type convertedFile struct {
	path string
	data []byte
}

// writeConverted writes files into dir (created if needed), each after
// header, and returns their paths, in order, up to the first that failed.
func writeConverted(dir, header string, files []convertedFile) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	var written []string
	for _, f := range files {
		if err := os.WriteFile(f.path, append([]byte(header), f.data...), 0o644); err != nil {
			return written, err
		}
		written = append(written, f.path)
	}
	return written, nil
}
