package main

import (
	"context"
	"flag"
	"fmt"
	"io"

	"github.com/promcp/promcp-device/manifests"
)

// cli is what a subcommand runs with: the context, its arguments, the
// standard streams and its flag set, named after the command and
// reporting on stderr. Every subcommand parses, refuses and fails through
// it, so that each says "promcp-device NAME: ..." the same way.
type cli struct {
	*flag.FlagSet
	ctx            context.Context
	name           string // "scan", "audit verify"
	args           []string
	stdin          io.Reader
	stdout, stderr io.Writer
}

func newCLI(ctx context.Context, name string, args []string, stdin io.Reader, stdout, stderr io.Writer) *cli {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	return &cli{FlagSet: fs, ctx: ctx, name: name, args: args, stdin: stdin, stdout: stdout, stderr: stderr}
}

// sub is the subcommand named by the first argument (audit verify, token
// add), with the arguments after it and a flag set of its own.
func (c *cli) sub() *cli {
	return newCLI(c.ctx, c.name+" "+c.args[0], c.args[1:], c.stdin, c.stdout, c.stderr)
}

// parse parses the arguments: false when they do not parse (the flag
// package has said why on stderr; the command exits 2).
func (c *cli) parse() bool { return c.Parse(c.args) == nil }

// usage says what is wrong with the command line and returns exit code 2.
func (c *cli) usage(format string, a ...any) int {
	fmt.Fprintf(c.stderr, "promcp-device %s: %s\n", c.name, fmt.Sprintf(format, a...))
	return 2
}

// fail says why the work failed and returns exit code 1.
func (c *cli) fail(err error) int {
	fmt.Fprintf(c.stderr, "promcp-device %s: %v\n", c.name, err)
	return 1
}

// load loads the manifest at path; nil, having said why on stderr, when
// it does not load.
func (c *cli) load(path string) *manifests.Manifest {
	m, err := manifests.Load(path)
	if err != nil {
		fmt.Fprintln(c.stderr, commandErr(c.name, err))
		return nil
	}
	return m
}
