// Command release writes and checks what `make release` ships beside the
// binaries: the SBOM of each archive, and the checks of the binaries
// themselves.
//
//	release sbom -o FILE -version V [-time T] BINARY...
//	    writes a CycloneDX 1.5 JSON SBOM of BINARY... (the binaries of one
//	    archive) from each one's Go build information (debug/buildinfo):
//	    the main module at version V, every binary with its SHA-256, Go
//	    version and build settings, every module it was linked with (path,
//	    version, go.sum h1 hash, replacement), and which binary uses which.
//	release check-sbom -sbom FILE -gomod FILE BINARY...
//	    checks FILE against the output of `go version -m BINARY...` (-gomod):
//	    the same Go version and exactly the same modules, path, version and
//	    h1 hash, for every binary; and each binary's SHA-256.
//	release check-elf -arch GOARCH BINARY...
//	    checks that each BINARY is a static ELF executable for linux/GOARCH
//	    (amd64 or arm64): the machine and class, no program interpreter, no
//	    dynamic section, and build information that says CGO_ENABLED=0.
//
// Every mode exits 1 with one line per problem on the standard error.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

const usage = `usage:
  release sbom -o FILE -version V [-time RFC3339] BINARY...
  release check-sbom -sbom FILE -gomod FILE BINARY...
  release check-elf -arch GOARCH BINARY...
`

// errUsage is a command line run cannot take: the usage, exit code 2.
var errUsage = errors.New("usage")

// run is the command with its arguments (without the program name): the
// exit code.
func run(args []string, stdout, stderr io.Writer) int {
	msg, err := dispatch(args, stderr)
	switch {
	case errors.Is(err, errUsage):
		_, _ = io.WriteString(stderr, usage)
		return 2
	case err != nil:
		_, _ = fmt.Fprintf(stderr, "release %s: %v\n", args[0], err)
		return 1
	}
	_, _ = io.WriteString(stdout, msg+"\n")
	return 0
}

// dispatch runs the mode args[0] with its flags: what to print when it
// succeeded, or why it failed (errUsage for a bad command line; the flag
// package has written its own complaint to stderr).
func dispatch(args []string, stderr io.Writer) (string, error) {
	if len(args) < 1 {
		return "", errUsage
	}
	mode, args := args[0], args[1:]
	fs := flag.NewFlagSet("release "+mode, flag.ContinueOnError)
	fs.SetOutput(stderr)
	switch mode {
	case "sbom":
		out := fs.String("o", "", "the SBOM file to write")
		version := fs.String("version", "", "the release version (git describe)")
		when := fs.String("time", "", "the SBOM's timestamp, RFC 3339 (default: now)")
		if fs.Parse(args) != nil || *out == "" || *version == "" || fs.NArg() == 0 {
			return "", errUsage
		}
		if err := writeSBOM(*out, *version, *when, fs.Args()); err != nil {
			return "", err
		}
		return fmt.Sprintf("release: %s: SBOM of %d binaries", *out, fs.NArg()), nil
	case "check-sbom":
		file := fs.String("sbom", "", "the SBOM file to check")
		gomod := fs.String("gomod", "", "the output of `go version -m` for the binaries")
		if fs.Parse(args) != nil || *file == "" || *gomod == "" || fs.NArg() == 0 {
			return "", errUsage
		}
		if err := checkSBOMFiles(*file, *gomod, fs.Args()); err != nil {
			return "", err
		}
		return fmt.Sprintf("release: %s: ok (the modules of go version -m, %d binaries)", *file, fs.NArg()), nil
	case "check-elf":
		arch := fs.String("arch", "", "the GOARCH the binaries must be for (amd64, arm64)")
		if fs.Parse(args) != nil || *arch == "" || fs.NArg() == 0 {
			return "", errUsage
		}
		var errs []error
		for _, bin := range fs.Args() {
			errs = append(errs, checkELF(bin, *arch))
		}
		if err := errors.Join(errs...); err != nil {
			return "", err
		}
		return fmt.Sprintf("release: %d binaries: static ELF, linux/%s", fs.NArg(), *arch), nil
	}
	return "", errUsage
}

// writeSBOM writes the SBOM of bins to out (see sbom).
func writeSBOM(out, version, when string, bins []string) error {
	t := time.Now().UTC()
	if when != "" {
		var err error
		if t, err = time.Parse(time.RFC3339, when); err != nil {
			return fmt.Errorf("-time: %w", err)
		}
	}
	var binaries []Binary
	for _, path := range bins {
		b, err := ReadBinary(path)
		if err != nil {
			return err
		}
		binaries = append(binaries, b)
	}
	data, err := Marshal(NewBOM(version, t, binaries))
	if err != nil {
		return err
	}
	if err := os.WriteFile(out, data, 0o644); err != nil {
		return fmt.Errorf("write the SBOM: %w", err)
	}
	return nil
}

// checkSBOMFiles reads the SBOM and the `go version -m` output and checks
// them against each other and the binaries (see CheckSBOM).
func checkSBOMFiles(file, gomod string, bins []string) error {
	data, err := os.ReadFile(file)
	if err != nil {
		return fmt.Errorf("read the SBOM: %w", err)
	}
	f, err := os.Open(gomod)
	if err != nil {
		return fmt.Errorf("read the go version -m output: %w", err)
	}
	defer func() { _ = f.Close() }() // read only
	listed, err := ParseGoVersionM(f)
	if err != nil {
		return fmt.Errorf("%s: %w", gomod, err)
	}
	sums := map[string]string{}
	for _, path := range bins {
		sum, err := fileSHA256(path)
		if err != nil {
			return err
		}
		sums[filepath.Base(path)] = sum
	}
	return CheckSBOM(data, listed, sums)
}
