// Command lgflow is the command-line front end of the lgflow library:
// datasets, training, sampling and evaluation of LG-VAE / LG-Flow.
//
// Usage:
//
//	lgflow <command> [flags]
//	lgflow help [command]
//
// The commands:
//
//	data        write a dataset split as graph6 / digraph6 lines
//	train       train a model bundle (LG-VAE, LG-Flow, sampler.json) from a file of graphs
//	tune        search a bundle's sampler settings on validation graphs
//	train-vae   train an LG-VAE autoencoder on a dataset
//	recon       measure an LG-VAE's reconstruction accuracy (optionally under latent noise)
//	train-flow  train LG-Flow in the latent space of a trained LG-VAE
//	sample      sample graphs (graph6, node-link JSON or SMILES) from trained models or bundles
//	eval        compare generated graphs with reference graphs (MMD, validity, V.U.N., MOSES metrics)
//	mol         canonicalise SMILES, report invalid ones and MOSES metrics
//	convert     rewrite a checkpoint in half precision and/or shards
//
// "lgflow help COMMAND" lists a command's flags.
//
// # Adding a command
//
// Each subcommand lives in its own file of package main and registers
// itself from an init function:
//
//	func init() {
//		register("train", "train an LG-VAE autoencoder", runTrain)
//	}
//
//	func runTrain(ctx context.Context, args []string) error {
//		fs := newFlagSet("train", "lgflow train -dataset NAME [flags]")
//		epochs := fs.Int("epochs", 10, "training epochs")
//		if err := parseFlags(fs, args); err != nil {
//			return err
//		}
//		fmt.Fprintf(stdout, "...")
//		return nil
//	}
//
// Commands write results to the package variables stdout and stderr (so
// tests can capture them), return usagef(...) errors for bad arguments
// (exit status 2) and other errors for failures (exit status 1), and
// honour ctx, which is cancelled on SIGINT / SIGTERM.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"

	"lgflow/tensor"
)

// command is one registered subcommand.
type command struct {
	name    string
	summary string
	run     func(ctx context.Context, args []string) error
}

var commands = map[string]*command{}

// stdout and stderr are where commands write; tests replace them.
var (
	stdout io.Writer = os.Stdout
	stderr io.Writer = os.Stderr
)

// register adds a subcommand. It panics on an empty or duplicate name
// (a programming error caught by any test run).
func register(name, summary string, run func(ctx context.Context, args []string) error) {
	if name == "" || run == nil {
		panic("lgflow: register needs a name and a function")
	}
	if _, dup := commands[name]; dup {
		panic("lgflow: command registered twice: " + name)
	}
	commands[name] = &command{name: name, summary: summary, run: run}
}

// usageError is an error in the command line (exit status 2).
type usageError struct{ msg string }

// Error returns the message.
func (e *usageError) Error() string { return e.msg }

// usagef returns a usage error: the command line itself is wrong.
func usagef(format string, args ...any) error {
	return &usageError{msg: fmt.Sprintf(format, args...)}
}

// newFlagSet returns a flag set that reports errors instead of exiting and
// prints usage (the synopsis line, then the flags) to stderr.
func newFlagSet(name, synopsis string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: %s\n\n", synopsis)
		if c, ok := commands[name]; ok && c.summary != "" {
			fmt.Fprintf(fs.Output(), "%s\n\nflags:\n", upperFirst(c.summary))
		}
		fs.PrintDefaults()
	}
	return fs
}

func upperFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// parseFlags parses args and rejects positional arguments. A parse error
// (already printed with the usage by the flag package) becomes a usage
// error; -h / -help gives flag.ErrHelp, which exits with status 0.
func parseFlags(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return &usageError{msg: err.Error()}
	}
	if fs.NArg() > 0 {
		return usagef("unexpected argument %q", fs.Arg(0))
	}
	return nil
}

func printHelp(w io.Writer) {
	fmt.Fprintf(w, "lgflow: latent flow matching for graphs (LG-VAE + LG-Flow)\n\nusage: lgflow <command> [flags]\n\ncommands:\n")
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-12s %s\n", n, commands[n].summary)
	}
	fmt.Fprintf(w, "  %-12s %s\n\nRun \"lgflow help <command>\" for a command's flags.\n", "help", "show this list, or a command's flags")
}

// dispatch runs the command named by args[0] and returns the exit status:
// 0 on success, 1 when the command failed, 2 for a bad command line.
// warnBF16 says on standard error when LGFLOW_GEMM_BF16=1 asks for bf16
// matrix products (tensor.SetBF16MatMul) on a CPU or build without them,
// where the products stay float32.
func warnBF16() {
	if os.Getenv("LGFLOW_GEMM_BF16") == "1" && !tensor.BF16MatMul() {
		fmt.Fprintf(stderr, "lgflow: LGFLOW_GEMM_BF16=1 is ignored: %v; matrix products stay float32\n", tensor.ErrBF16Unsupported)
	}
}

func dispatch(ctx context.Context, args []string) int {
	if len(args) == 0 {
		printHelp(stderr)
		return 2
	}
	name, rest := args[0], args[1:]
	switch name {
	case "help", "-h", "-help", "--help":
		if len(rest) == 0 {
			printHelp(stdout)
			return 0
		}
		c, ok := commands[rest[0]]
		if !ok {
			fmt.Fprintf(stderr, "lgflow help: unknown command %q\n\n", rest[0])
			printHelp(stderr)
			return 2
		}
		name, rest = c.name, []string{"-h"}
	}
	c, ok := commands[name]
	if !ok {
		fmt.Fprintf(stderr, "lgflow: unknown command %q\n\n", name)
		printHelp(stderr)
		return 2
	}
	warnBF16()
	err := c.run(ctx, rest)
	var ue *usageError
	switch {
	case err == nil:
		return 0
	case errors.Is(err, flag.ErrHelp):
		return 0
	case errors.As(err, &ue):
		fmt.Fprintf(stderr, "lgflow %s: %v\n", name, err)
		return 2
	default:
		fmt.Fprintf(stderr, "lgflow %s: %v\n", name, err)
		return 1
	}
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := dispatch(ctx, os.Args[1:])
	stop()
	os.Exit(code)
}
